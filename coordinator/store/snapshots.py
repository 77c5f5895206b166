"""A record kept as a JSON document (a classic group's snapshot, a KIP-848 consumer group
and its members, a hand-over): every field of the record but its key columns, bytes as
base64, and a version. The document follows the record's declaration (``group/records.py``),
so a field added there (with a default, for documents stored without it) is stored and
read back with no change here nor a schema change."""

from __future__ import annotations

import base64
import dataclasses
import json
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from ..group.handover import GroupHandover

#: The documents' version (one for every kind; a reader refuses another).
VERSION = 1

R = TypeVar("R")
_Codec = Callable[[Any], Any]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _identity(value: Any) -> Any:
    return value


def _writer(hint: Any) -> _Codec:
    """How a value of type ``hint`` goes into JSON."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bytes:
        return _b64
    if dataclasses.is_dataclass(hint):
        fields = [(f.name, _writer(t)) for f, t in _hinted_fields(hint)]
        return lambda v: {name: write(getattr(v, name)) for name, write in fields}
    if origin in (typing.Union, types.UnionType):
        [inner] = [a for a in args if a is not type(None)]
        write = _writer(inner)
        return lambda v: None if v is None else write(v)
    if origin in (list, tuple):
        writes = [_writer(a) for a in args if a is not Ellipsis]
        if all(w is _identity for w in writes):
            return list
        if origin is tuple and len(writes) > 1:
            return lambda v: [w(x) for w, x in zip(writes, v, strict=True)]
        return lambda v: [writes[0](x) for x in v]
    if origin is dict:
        write = _writer(args[1])
        return dict if write is _identity else (lambda v: {k: write(x) for k, x in v.items()})
    return _identity


def _reader(hint: Any) -> _Codec:
    """How a value of type ``hint`` comes back from JSON."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bytes:
        return base64.b64decode
    if dataclasses.is_dataclass(hint):
        return _record_reader(hint, ())
    if origin in (typing.Union, types.UnionType):
        [inner] = [a for a in args if a is not type(None)]
        read = _reader(inner)
        return lambda v: None if v is None else read(v)
    if origin in (list, tuple):
        reads = [_reader(a) for a in args if a is not Ellipsis]
        if origin is tuple and len(reads) > 1:
            return lambda v: tuple(r(x) for r, x in zip(reads, v, strict=True))
        read = reads[0]
        return list if read is _identity else (lambda v: [read(x) for x in v])
    if origin is dict:
        read = _reader(args[1])
        return dict if read is _identity else (lambda v: {k: read(x) for k, x in v.items()})
    return _identity


def _hinted_fields(cls: Any) -> list[tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls)]


def _record_reader(cls: Any, keys: tuple[str, ...]) -> _Codec:
    fields = [(f.name, _reader(t)) for f, t in _hinted_fields(cls) if f.name not in keys]

    def read(d: dict[str, Any], **key: Any) -> Any:
        # A field the document lacks (stored before it existed) takes its default.
        return cls(**key, **{name: r(d[name]) for name, r in fields if name in d})

    return read


class Document:
    """One record type as a JSON document; ``keys``: its fields kept in their own
    columns (not in the document)."""

    def __init__(self, cls: type[Any], keys: tuple[str, ...], what: str) -> None:
        self.what = what
        self.keys = keys
        fields = [(f.name, _writer(t)) for f, t in _hinted_fields(cls) if f.name not in keys]
        self._fields = fields
        self._read = _record_reader(cls, keys)

    def dumps(self, record: Any) -> str:
        doc = {"version": VERSION}
        for name, write in self._fields:
            doc[name] = write(getattr(record, name))
        return json.dumps(doc)

    def loads(self, data: str, *key: Any) -> Any:
        d = json.loads(data)
        check_version(f"{self.what} {key[0]!r}", d)
        return self._read(d, **dict(zip(self.keys, key, strict=True)))


def check_version(what: str, d: dict[str, Any]) -> None:
    if d.get("version") != VERSION:
        raise ValueError(f"{what}: unknown record version {d.get('version')!r}")


def handover_to_json(h: GroupHandover) -> dict[str, Any]:
    return {
        "version": VERSION,
        "generation_id": h.generation_id,
        "sessions": h.sessions,
        "pending": h.pending,
    }


def handover_from_json(group_id: str, d: dict[str, Any], age_ms: int) -> GroupHandover:
    check_version(f"hand-over of group {group_id!r}", d)
    return GroupHandover(group_id, d["generation_id"], d["sessions"], d["pending"], age_ms)
