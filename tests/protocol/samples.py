"""Deterministic sample messages with every field of a version set to a non-default value."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from construct import Construct, Flag, FormatField

from protocol.primitives import KArray, KBytes, KString, KUuid
from protocol.schema import Struct, is_flexible
from protocol.structs import KNullableStruct, KStruct, build_struct


def _value(sub: Construct, counter: itertools.count[int]) -> Any:
    n = next(counter)
    if isinstance(sub, FormatField):
        return 0.5 + n if sub.fmtstr.endswith("d") else n % 100
    if sub is Flag:
        return True
    if isinstance(sub, KUuid):
        return uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF + n)
    if isinstance(sub, KString):
        return f"s{n}"
    if isinstance(sub, KBytes):
        return bytes([n % 256, 0xAB])
    if isinstance(sub, KArray):
        return [_value(sub.element, counter) for _ in range(2 if sub.element is not None else 0)]
    if isinstance(sub, KNullableStruct):
        return _struct(sub.inner, counter)
    if isinstance(sub, KStruct):
        return _struct(sub, counter)
    raise TypeError(sub)


def _struct(ks: KStruct, counter: itertools.count[int]) -> Struct:
    kwargs = {name: _value(sub, counter) for name, sub in ks.fields}
    for tf in ks.tagged:
        kwargs[tf.name] = _value(tf.sub, counter)
    return ks.cls(**kwargs)


def sample(cls: type[Struct], version: int) -> Struct:
    return _struct(build_struct(cls, version, is_flexible(cls, version)), itertools.count(1))
