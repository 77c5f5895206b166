"""Byte-for-byte agreement with an independent codec, kio, for every API version kio knows."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib
import io
import re
import types
import typing
from pathlib import Path
from typing import Any

import kio.schema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, i64Timedelta

from protocol import codec
from protocol.apis import ALL
from protocol.schema import Struct
from tests.hypothesis_profiles import examples

from .strategies import messages

st.register_type_strategy(Records, st.binary(max_size=16).map(Records))
# kio's own reader overflows timedelta near the int64 limits; retention times are small.
st.register_type_strategy(
    i64Timedelta,
    st.integers(-(2**40), 2**40).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)


#: The most elements a drawn array holds. Hypothesis's own ``from_type`` draws arrays of
#: arrays of structs without a bound: up to 5 s of data generation per example (a third
#: of the whole test suite's time went into this module), where three elements a level
#: already give empty, single and repeated elements at every depth.
MAX_ELEMENTS = 3


@functools.cache
def kio_entities(cls: type[Any]) -> st.SearchStrategy[Any]:
    """kio objects of ``cls``, field by field, arrays bounded (``MAX_ELEMENTS``)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: _of(hints[f.name]) for f in dataclasses.fields(cls) if f.init}
    return st.builds(cls, **fields)


def _of(tp: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_of(args[0]), max_size=MAX_ELEMENTS).map(tuple)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_of(a) for a in args))
    if dataclasses.is_dataclass(tp):
        return st.deferred(lambda: kio_entities(tp))
    return st.from_type(tp)


#: kio's schema modules, one per API, version and kind; hundreds of dataclasses, so a case
#: imports its own when it runs (importing them all made a third of the collection time).
KIO_SCHEMA = Path(kio.schema.__file__).parent


def _kio_module(api_name: str, version: int, kind: str) -> str | None:
    """kio's module for the message, if kio knows that version."""
    package = re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).lower()
    if not (KIO_SCHEMA / package / f"v{version}" / f"{kind}.py").is_file():
        return None
    return f"kio.schema.{package}.v{version}.{kind}"


def _kio_class(module: str, ours: type[Struct]) -> type[Any]:
    cls: type[Any] = getattr(importlib.import_module(module), ours.__name__)
    return cls


CASES = [
    pytest.param(ours, module, v, id=f"{ours.__name__}-v{v}")
    for api in ALL
    for ours, kind in ((api.request, "request"), (api.response, "response"))
    for v in range(api.min_version, api.max_version + 1)
    if (module := _kio_module(api.name, v, kind)) is not None
]


def _kio_bytes(kio_cls: type[Any], obj: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(kio_cls)(buf, obj)
    return buf.getvalue()


def test_every_api_has_kio_coverage() -> None:
    covered = {c.values[0].__name__ for c in CASES}
    assert covered >= {cls.__name__ for api in ALL for cls in (api.request, api.response)}


@pytest.mark.parametrize(("ours", "module", "version"), CASES)
@settings(
    max_examples=examples(20, fast=3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_kio_bytes_roundtrip_through_ours(
    ours: type[Struct], module: str, version: int, data: st.DataObject
) -> None:
    kio_cls = _kio_class(module, ours)
    kio_obj = data.draw(kio_entities(kio_cls))
    wire = _kio_bytes(kio_cls, kio_obj)
    decoded = codec.decode(ours, wire, version)
    again = codec.encode(decoded, version)
    assert again == wire
    assert entity_reader(kio_cls)(again, 0)[0] == kio_obj


@pytest.mark.parametrize(("ours", "module", "version"), CASES)
@settings(
    max_examples=examples(20, fast=3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_our_bytes_roundtrip_through_kio(
    ours: type[Struct], module: str, version: int, data: st.DataObject
) -> None:
    kio_cls = _kio_class(module, ours)
    msg = data.draw(messages(ours, version))
    wire = codec.encode(msg, version)
    kio_obj, end = entity_reader(kio_cls)(wire, 0)
    assert end == len(wire)
    assert _kio_bytes(kio_cls, kio_obj) == wire
