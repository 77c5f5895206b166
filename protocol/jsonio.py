"""Messages to and from JSON-friendly values, guided by the same construct tree as the codecs.

Bytes are hex strings, UUIDs are their canonical strings; only the fields a version has are
written, and unknown tagged fields appear under ``"_unknown_tagged_fields"`` so that
decode -> JSON -> encode reproduces the input byte for byte.
"""

from __future__ import annotations

import uuid
from typing import Any

from construct import Construct

from .errors import DecodeError
from .primitives import KArray, KBytes, KUuid
from .structs import KNullableStruct, KStruct

UNKNOWN_KEY = "_unknown_tagged_fields"


def to_json(value: Any, sub: Construct) -> Any:
    if value is None:
        return None
    if isinstance(sub, KNullableStruct):
        return to_json(value, sub.inner)
    if isinstance(sub, KStruct):
        out: dict[str, Any] = {}
        for name, field in sub.fields:
            out[name] = to_json(getattr(value, name), field)
        for tf in sub.tagged:
            out[tf.name] = to_json(getattr(value, tf.name), tf.sub)
        if value.unknown_tagged_fields:
            out[UNKNOWN_KEY] = {str(t): p.hex() for t, p in value.unknown_tagged_fields.items()}
        return out
    if isinstance(sub, KArray):
        return [to_json(v, sub.element) for v in value]
    if isinstance(sub, KBytes):
        return bytes(value).hex()
    if isinstance(sub, KUuid):
        return str(value)
    return value


def from_json(value: Any, sub: Construct) -> Any:
    if value is None:
        return None
    if isinstance(sub, KNullableStruct):
        return from_json(value, sub.inner)
    if isinstance(sub, KStruct):
        if not isinstance(value, dict):
            raise DecodeError(f"{sub.cls.__name__}: expected an object")
        known = {name: field for name, field in sub.fields}
        known.update({tf.name: tf.sub for tf in sub.tagged})
        unexpected = set(value) - set(known) - {UNKNOWN_KEY}
        if unexpected:
            raise DecodeError(f"{sub.cls.__name__} v{sub.version} has no {sorted(unexpected)}")
        kwargs = {name: from_json(v, known[name]) for name, v in value.items() if name in known}
        obj = sub.cls(**kwargs)
        if UNKNOWN_KEY in value:
            obj.unknown_tagged_fields = {
                int(t): bytes.fromhex(p) for t, p in value[UNKNOWN_KEY].items()
            }
        return obj
    if isinstance(sub, KArray):
        return [from_json(v, sub.element) for v in value]
    if isinstance(sub, KBytes):
        return bytes.fromhex(value)
    if isinstance(sub, KUuid):
        return uuid.UUID(value)
    return value
