"""A record kept as a JSON document (a classic group's snapshot, a KIP-848 consumer group
and its members): every field of the record but its key columns, bytes as base64, and a
version. The document follows the record's declaration (``group/records.py``), so a
field added there (with a default, for documents stored without it) is stored and read
back with no change here nor a schema change. A cluster's hand-over (not a record) is a
JSON document too (``handover_to_json``)."""

from __future__ import annotations

import base64
import dataclasses
import json
import types
import typing
from collections.abc import Callable
from typing import Any

from ..group.handover import GroupHandover

#: The documents' version (one for every kind; a reader refuses another).
VERSION = 1

_Codec = Callable[..., Any]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _expr(hint: Any, value: str, ns: dict[str, Any], write: bool, depth: int = 0) -> str:
    """A Python expression turning ``value`` (of type ``hint``) into JSON (``write``) or
    back: inline, so that a codec is straight-line code."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    x = f"x{depth}"
    if hint is bytes:
        ns["b64"], ns["unb64"] = _b64, base64.b64decode
        return f"{'b64' if write else 'unb64'}({value})"
    if dataclasses.is_dataclass(hint):
        name = f"record_{getattr(hint, '__name__', 'x')}"
        ns[name] = _compile(hint, (), write)
        return f"{name}({value})"
    if origin in (typing.Union, types.UnionType):
        [inner] = [a for a in args if a is not type(None)]
        converted = _expr(inner, value, ns, write, depth)
        return value if converted == value else f"(None if {value} is None else {converted})"
    if origin is tuple and Ellipsis not in args:
        items = [_expr(a, f"{value}[{i}]", ns, write, depth) for i, a in enumerate(args)]
        if write and all(item == f"{value}[{i}]" for i, item in enumerate(items)):
            return value
        return f"[{', '.join(items)}]" if write else f"({', '.join(items)},)"
    if origin in (list, tuple):
        item = _expr(args[0], x, ns, write, depth + 1)
        if item == x:
            return value if origin is list or write else f"tuple({value})"
        return (
            f"[{item} for {x} in {value}]"
            if origin is list or write
            else f"tuple({item} for {x} in {value})"
        )
    if origin is dict:
        item = _expr(args[1], x, ns, write, depth + 1)
        k = f"k{depth}"
        return value if item == x else f"{{{k}: {item} for {k}, {x} in {value}.items()}}"
    return value


def _compile(cls: Any, keys: tuple[str, ...], write: bool) -> _Codec:
    """A record's writer (record -> dict) or reader (dict, then its key values -> record),
    made once as straight-line code: a snapshot of a large group is written at every
    rebalance, and every group's is read at start."""
    hints = typing.get_type_hints(cls)
    namespace: dict[str, Any] = {"cls": cls}
    parts = []
    for f in dataclasses.fields(cls):
        if f.name in keys:
            continue
        value = f"v.{f.name}" if write else f"d[{f.name!r}]"
        expr = _expr(hints[f.name], value, namespace, write)
        if write:
            parts.append(f"{f.name!r}: {expr}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            parts.append(f"{f.name}={expr}")
        else:  # stored before the field existed: its default
            parts.append(f"**({{{f.name!r}: {expr}}} if {f.name!r} in d else {{}})")
    if write:
        source = f"def codec(v):\n    return {{{', '.join(parts)}}}\n"
    else:
        key_args = "".join(f", {k}" for k in keys)
        key_kw = "".join(f"{k}={k}, " for k in keys)
        source = f"def codec(d{key_args}):\n    return cls({key_kw}{', '.join(parts)})\n"
    exec(source, namespace)  # code made here from the record's own declaration
    codec: _Codec = namespace["codec"]
    codec.__doc__ = source
    return codec


class Document:
    """One record type as a JSON document; ``keys``: its fields kept in their own
    columns (not in the document)."""

    def __init__(self, cls: type[Any], keys: tuple[str, ...], what: str) -> None:
        self.what = what
        self._write = _compile(cls, keys, write=True)
        self._read = _compile(cls, keys, write=False)

    def dumps(self, record: Any) -> str:
        return json.dumps({"version": VERSION, **self._write(record)})

    def loads(self, data: str, *key: Any) -> Any:
        d = json.loads(data)
        if d.get("version") != VERSION:
            check_version(f"{self.what} {key[0]!r}", d)
        return self._read(d, *key)


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
