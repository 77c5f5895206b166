"""Byte-for-byte agreement with an independent codec, kio, for every API version kio knows."""

from __future__ import annotations

import datetime
import importlib
import io
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, i64Timedelta

from protocol import codec
from protocol.apis import ALL
from protocol.schema import Struct

from .strategies import messages

st.register_type_strategy(Records, st.binary(max_size=16).map(Records))
# kio's own reader overflows timedelta near the int64 limits; retention times are small.
st.register_type_strategy(
    i64Timedelta,
    st.integers(-(2**40), 2**40).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)


def _kio_class(api_name: str, version: int, kind: str) -> type[Any] | None:
    module = re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).lower()
    try:
        mod = importlib.import_module(f"kio.schema.{module}.v{version}.{kind}")
    except ModuleNotFoundError:
        return None
    cls: type[Any] = getattr(mod, f"{api_name}{kind.capitalize()}")
    return cls


CASES = [
    pytest.param(ours, kio_cls, v, id=f"{ours.__name__}-v{v}")
    for api in ALL
    for ours, kind in ((api.request, "request"), (api.response, "response"))
    for v in range(api.min_version, api.max_version + 1)
    if (kio_cls := _kio_class(api.name, v, kind)) is not None
]


def _kio_bytes(kio_cls: type[Any], obj: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(kio_cls)(buf, obj)
    return buf.getvalue()


def test_every_api_has_kio_coverage() -> None:
    covered = {c.values[0].__name__ for c in CASES}
    assert covered >= {cls.__name__ for api in ALL for cls in (api.request, api.response)}


@pytest.mark.parametrize(("ours", "kio_cls", "version"), CASES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kio_bytes_roundtrip_through_ours(
    ours: type[Struct], kio_cls: type[Any], version: int, data: st.DataObject
) -> None:
    kio_obj = data.draw(st.from_type(kio_cls))
    wire = _kio_bytes(kio_cls, kio_obj)
    decoded = codec.decode(ours, wire, version)
    again = codec.encode(decoded, version)
    assert again == wire
    assert entity_reader(kio_cls)(again, 0)[0] == kio_obj


@pytest.mark.parametrize(("ours", "kio_cls", "version"), CASES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_our_bytes_roundtrip_through_kio(
    ours: type[Struct], kio_cls: type[Any], version: int, data: st.DataObject
) -> None:
    msg = data.draw(messages(ours, version))
    wire = codec.encode(msg, version)
    kio_obj, end = entity_reader(kio_cls)(wire, 0)
    assert end == len(wire)
    assert _kio_bytes(kio_cls, kio_obj) == wire
