"""Encode and decode messages: the entry points the rest of the project uses.

``decode``/``encode`` run the compiled functions derived from the construct tree;
``construct_for`` returns that tree itself (the reference implementation, used by the tests
and available to anyone who wants construct's parse/build).
"""

from __future__ import annotations

import io
import struct
from typing import Any, TypeVar, cast

from construct import Construct, ConstructError

from .codegen import Decoder, Encoder, compile_struct, compile_view
from .errors import DecodeError, EncodeError
from .schema import Struct, in_range, is_flexible
from .structs import KStruct, build_struct

T = TypeVar("T", bound=Struct)

# What the generated decoders can raise on hostile input besides DecodeError itself.
DECODE_FAULTS = (
    struct.error,
    IndexError,
    UnicodeDecodeError,
    ValueError,
    OverflowError,
    MemoryError,
    RecursionError,
)
ENCODE_FAULTS = (
    struct.error,
    AttributeError,
    TypeError,
    UnicodeEncodeError,
    ValueError,
    OverflowError,
)


def struct_for(cls: type[Struct], version: int) -> KStruct:
    info = cls.kafka
    if info is None:
        raise TypeError(f"{cls.__name__} is not a top-level message")
    if not in_range(version, info.valid):
        raise ValueError(f"{cls.__name__} has no version {version}")
    return build_struct(cls, version, is_flexible(cls, version))


def construct_for(cls: type[Struct], version: int) -> Construct:
    """The construct describing ``cls`` at ``version`` (parse/build with every check)."""
    return struct_for(cls, version)


# (class, version) -> its compiled functions: one dict lookup per message on the hot path
# instead of the version checks and the construct cache key of ``struct_for``.
_COMPILED: dict[tuple[type[Struct], int], tuple[Decoder, Encoder]] = {}


def compiled(cls: type[Struct], version: int) -> tuple[Decoder, Encoder]:
    """The compiled (decoder, encoder) of ``cls`` at ``version`` (valid versions only)."""
    fns = _COMPILED.get((cls, version))
    if fns is None:
        fns = _COMPILED[(cls, version)] = compile_struct(struct_for(cls, version))
    return fns


_VIEWS: dict[tuple[type[Struct], int, tuple[str, ...]], Decoder] = {}


def compiled_view(cls: type[Struct], version: int, fields: tuple[str, ...]) -> Decoder:
    """A decoder of ``cls`` at ``version`` returning ``((field values...), offset)`` instead
    of an object: generated from the same declaration, with the same checks. It raises
    what the full decoder raises (``DECODE_FAULTS`` included: callers map them)."""
    key = (cls, version, fields)
    view = _VIEWS.get(key)
    if view is None:
        view = _VIEWS[key] = compile_view(struct_for(cls, version), fields)
    return view


def read(cls: type[T], buf: bytes, offset: int, version: int) -> tuple[T, int]:
    """Decode ``cls`` from ``buf`` at ``offset``; return it and the offset after it."""
    dec, _ = compiled(cls, version)
    try:
        obj, end = dec(buf, offset, len(buf))
        return cast(T, obj), end
    except DecodeError:
        raise
    except DECODE_FAULTS as exc:
        raise DecodeError(f"malformed {cls.__name__} v{version}: {exc!r}") from exc


def decode(cls: type[T], data: bytes | bytearray | memoryview, version: int) -> T:
    """Decode exactly one ``cls`` at ``version`` from ``data`` (trailing bytes are an error)."""
    buf = data if isinstance(data, bytes) else bytes(data)
    obj, end = read(cls, buf, 0, version)
    if end != len(buf):
        raise DecodeError(f"{len(buf) - end} trailing bytes after {cls.__name__} v{version}")
    return obj


def write(msg: Struct, version: int, w: bytearray) -> None:
    """Append ``msg`` encoded at ``version`` to ``w``."""
    _, enc = compiled(type(msg), version)
    try:
        enc(msg, w)
    except EncodeError:
        raise
    except ENCODE_FAULTS as exc:
        raise EncodeError(f"cannot encode {type(msg).__name__} v{version}: {exc!r}") from exc


def encode(msg: Struct, version: int) -> bytes:
    w = bytearray()
    write(msg, version, w)
    return bytes(w)


def parse_reference(cls: type[T], data: bytes, version: int) -> T:
    """Decode with construct's own parser (slow; the reference the compiled code must match)."""
    stream = io.BytesIO(data)
    try:
        obj: T = construct_for(cls, version).parse_stream(stream)
    except DecodeError:
        raise
    except (ConstructError, *DECODE_FAULTS) as exc:
        raise DecodeError(f"malformed {cls.__name__} v{version}: {exc!r}") from exc
    if stream.tell() != len(data):
        raise DecodeError(f"trailing bytes after {cls.__name__} v{version}")
    return obj


def build_reference(msg: Struct, version: int) -> bytes:
    """Encode with construct's own builder (slow; the reference)."""
    try:
        data: Any = construct_for(type(msg), version).build(msg)
    except EncodeError:
        raise
    except (ConstructError, *ENCODE_FAULTS) as exc:
        raise EncodeError(f"cannot encode {type(msg).__name__} v{version}: {exc!r}") from exc
    return bytes(data)
