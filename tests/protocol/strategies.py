"""Hypothesis strategies for our messages, derived from the same construct tree the codecs use."""

from __future__ import annotations

import functools
from typing import Any

from construct import Construct, Flag, FormatField
from hypothesis import strategies as st

from protocol.errors import ErrorCode
from protocol.primitives import KArray, KBytes, KString, KUuid
from protocol.schema import Struct, is_flexible
from protocol.structs import KNullableStruct, KStruct, build_struct

_INT_RANGES = {
    "b": (-(2**7), 2**7 - 1),
    "h": (-(2**15), 2**15 - 1),
    "i": (-(2**31), 2**31 - 1),
    "l": (-(2**31), 2**31 - 1),
    "q": (-(2**63), 2**63 - 1),
    "H": (0, 2**16 - 1),
}

_text = st.text(max_size=12)
# Real error codes only: an independent codec may refuse numbers Kafka never assigned. kio
# 0.6.5 knows them up to 133 (Kafka 4.1); Kafka 4.4's GROUP_DELETION_FAILED (134) is newer.
_error_codes = st.sampled_from([int(c) for c in ErrorCode if c <= 133])
# kio reads *_ms fields as timedeltas, which cannot hold the extremes of an int64.
_durations = st.integers(-1, 2**31 - 1)
_binary = st.binary(max_size=24)


def for_construct(sub: Construct) -> st.SearchStrategy[Any]:
    if isinstance(sub, FormatField):
        code = sub.fmtstr[1:]
        if code == "d":
            return st.floats(allow_nan=False)
        lo, hi = _INT_RANGES[code]
        return st.integers(lo, hi)
    if sub is Flag:
        return st.booleans()
    if isinstance(sub, KUuid):
        return st.uuids()
    if isinstance(sub, KString):
        return st.none() | _text if sub.nullable else _text
    if isinstance(sub, KBytes):
        return st.none() | _binary if sub.nullable else _binary
    if isinstance(sub, KArray):
        items = st.lists(for_construct(sub.element), max_size=3)
        return st.none() | items if sub.nullable else items
    if isinstance(sub, KNullableStruct):
        return st.none() | for_struct(sub.inner)
    if isinstance(sub, KStruct):
        return for_struct(sub)
    raise TypeError(f"no strategy for {sub!r}")


def for_struct(ks: KStruct) -> st.SearchStrategy[Struct]:
    fields: dict[str, st.SearchStrategy[Any]] = {
        n: _error_codes
        if n == "error_code"
        else _durations
        if n.endswith("_ms") and isinstance(s, FormatField)
        else for_construct(s)
        for n, s in ks.fields
    }
    for tf in ks.tagged:
        fields[tf.name] = for_construct(tf.sub)
    return st.fixed_dictionaries(fields).map(lambda kw: ks.cls(**kw))


@functools.cache
def messages(cls: type[Struct], version: int) -> st.SearchStrategy[Struct]:
    # Built once: the tests draw it in every example, and a new strategy tree costs more
    # than the draw.
    return for_struct(build_struct(cls, version, is_flexible(cls, version)))
