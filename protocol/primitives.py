"""Kafka's wire primitives as ``construct`` classes.

Each class is a normal construct (``parse``/``build`` work and keep every check), and also
knows how to *emit* Python source for the same encoding (``emit_decode``/``emit_encode``).
``protocol.codegen`` stitches those snippets into one straight-line function per message
version, so the construct tree stays the single description of the wire format while the hot
path runs without construct's per-field overhead.  Construct's own ``compile()`` cannot do
this: it has no emitter for varints and drops length checks.

Emitted decoders read from ``buf`` (``bytes``) at offset ``o`` with ``blen = len(buf)``;
emitted encoders append to a ``bytearray``.  Snippets may raise ``struct.error``,
``IndexError`` or ``UnicodeDecodeError``; the codec turns those into ``DecodeError``.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, Any

from construct import Construct, Flag, FormatField, Int16sb, Int32sb, stream_read, stream_write

from .errors import DecodeError, EncodeError

if TYPE_CHECKING:
    from .codegen import CodeGen

MAX_VARINT_BYTES = 5
UINT32_LIMIT = 1 << 32


# --------------------------------------------------------------------------------------
# Runtime helpers shared by construct parsing and emitted code.


def read_uvarint_tail(buf: bytes, o: int, first: int) -> tuple[int, int]:
    """Finish an unsigned varint whose first byte (``first``, high bit set) was consumed."""
    value = first & 0x7F
    shift = 7
    for _ in range(MAX_VARINT_BYTES - 1):
        b = buf[o]
        o += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value >= UINT32_LIMIT:
                raise DecodeError("unsigned varint exceeds 32 bits")
            return value, o
        shift += 7
    raise DecodeError("unsigned varint longer than 5 bytes")


def write_uvarint(w: bytearray, value: int) -> None:
    if not 0 <= value < UINT32_LIMIT:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        w.append((value & 0x7F) | 0x80)
        value >>= 7
    w.append(value)


def uvarint_bytes(value: int) -> bytes:
    w = bytearray()
    write_uvarint(w, value)
    return bytes(w)


def write_unknown_tags(w: bytearray, unknown: dict[int, bytes]) -> None:
    write_uvarint(w, len(unknown))
    for tag in sorted(unknown):
        payload = unknown[tag]
        write_uvarint(w, tag)
        write_uvarint(w, len(payload))
        w += payload


def write_tag_section(
    w: bytearray, known: list[tuple[int, bytearray]], unknown: dict[int, bytes] | None
) -> None:
    """Write known tagged fields (already encoded) merged with unknown ones, ascending."""
    entries: list[tuple[int, bytes | bytearray]] = list(known)
    if unknown:
        entries.extend(unknown.items())
        entries.sort(key=lambda e: e[0])
    write_uvarint(w, len(entries))
    for tag, payload in entries:
        write_uvarint(w, tag)
        write_uvarint(w, len(payload))
        w += payload


def pack_int32s(values: list[int]) -> bytes:
    return struct.pack(f">{len(values)}i", *values)


def pack_int64s(values: list[int]) -> bytes:
    return struct.pack(f">{len(values)}q", *values)


def unpack_int32s(buf: bytes, o: int, n: int) -> list[int]:
    return list(struct.unpack_from(f">{n}i", buf, o))


def unpack_int64s(buf: bytes, o: int, n: int) -> list[int]:
    return list(struct.unpack_from(f">{n}q", buf, o))


# --------------------------------------------------------------------------------------
# Construct classes.


class UVarint(Construct):  # type: ignore[misc]
    """Unsigned LEB128 varint limited to 5 bytes / 32 bits, as Kafka reads it."""

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        for i in range(MAX_VARINT_BYTES):
            b: int = stream_read(stream, 1, path)[0]
            value |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if value >= UINT32_LIMIT:
                    raise DecodeError("unsigned varint exceeds 32 bits")
                return value
        raise DecodeError("unsigned varint longer than 5 bytes")

    def _build(self, obj: int, stream: Any, context: Any, path: str) -> int:
        data = uvarint_bytes(obj)
        stream_write(stream, data, len(data), path)
        return obj

    @staticmethod
    def emit_read(g: CodeGen, target: str) -> None:
        b = g.tmp("b")
        g.line(f"{b} = buf[o]")
        g.line("o += 1")
        g.line(f"if {b} > 127:")
        g.line(f"    {target}, o = read_uvarint_tail(buf, o, {b})")
        g.line("else:")
        g.line(f"    {target} = {b}")

    @staticmethod
    def emit_write(g: CodeGen, expr: str, w: str) -> None:
        n = g.tmp("n")
        g.line(f"{n} = {expr}")
        g.line(f"if {n} < 128:")
        g.line(f"    {w}.append({n})")
        g.line("else:")
        g.line(f"    write_uvarint({w}, {n})")


_uvarint = UVarint()


class KUuid(Construct):  # type: ignore[misc]
    """16 raw bytes as ``uuid.UUID``."""

    fixed = "16s"

    def _parse(self, stream: Any, context: Any, path: str) -> uuid.UUID:
        return uuid.UUID(bytes=stream_read(stream, 16, path))

    def _build(self, obj: uuid.UUID, stream: Any, context: Any, path: str) -> uuid.UUID:
        stream_write(stream, obj.bytes, 16, path)
        return obj


def fixed_format(sub: Construct) -> str | None:
    """The ``struct`` format of a fixed-width construct (ints, bool, uuid), else None."""
    if isinstance(sub, FormatField):
        # construct spells int32 ">l"; normalise so callers can match on "i".
        return str(sub.fmtstr[1:]).replace("l", "i")
    if sub is Flag:
        return "?"
    if isinstance(sub, KUuid):
        return "16s"
    return None


class _Length(Construct):  # type: ignore[misc]
    """Shared parse/build of a length prefix: classic int16/int32 or compact varint."""

    def __init__(self, compact: bool, nullable: bool, classic_len: Construct) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable
        self.classic_len = classic_len

    def _read_len(self, stream: Any, context: Any, path: str) -> int | None:
        if self.compact:
            n = int(_uvarint._parsereport(stream, context, path)) - 1
        else:
            n = int(self.classic_len._parsereport(stream, context, path))
        if n == -1:
            if not self.nullable:
                raise DecodeError(f"null in non-nullable field at {path}")
            return None
        if n < -1:
            raise DecodeError(f"negative length {n} at {path}")
        return n

    def _write_len(self, n: int | None, stream: Any, context: Any, path: str) -> None:
        if n is None:
            if not self.nullable:
                raise EncodeError(f"null in non-nullable field at {path}")
            n = -1
        if self.compact:
            _uvarint._build(n + 1, stream, context, path)
        else:
            self.classic_len._build(n, stream, context, path)

    # Emitted length read: leaves the length (or -1 for null) in `target`.
    def emit_read_len(self, g: CodeGen, target: str) -> None:
        if self.compact:
            UVarint.emit_read(g, target)
            g.line(f"{target} -= 1")
        else:
            fmt = self.classic_len.fmtstr
            g.line(f"{target}, = {g.unpacker(fmt)}(buf, o)")
            g.line(f"o += {struct.calcsize(fmt)}")
        g.line(f"if {target} < 0:")
        if self.nullable:
            g.line(f"    if {target} < -1:")
            g.line("        raise DecodeError('negative length')")
        else:
            g.line("    raise DecodeError('null or negative length in non-nullable field')")

    def emit_write_len(self, g: CodeGen, n_expr: str, w: str) -> None:
        if self.compact:
            UVarint.emit_write(g, f"{n_expr} + 1", w)
        else:
            g.line(f"{w} += {g.packer(self.classic_len.fmtstr)}({n_expr})")

    def emit_write_null(self, g: CodeGen, w: str) -> None:
        if not self.nullable:
            g.line("raise EncodeError('null in non-nullable field')")
        elif self.compact:
            g.line(f"{w}.append(0)")
        else:
            g.line(f"{w} += {g.const(self.classic_len.build(-1))}")


class KString(_Length):
    """Kafka string: int16 (classic) or varint N+1 (compact) length, then UTF-8."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, Int16sb)

    def _parse(self, stream: Any, context: Any, path: str) -> str | None:
        n = self._read_len(stream, context, path)
        if n is None:
            return None
        return str(stream_read(stream, n, path), "utf-8")

    def _build(self, obj: str | None, stream: Any, context: Any, path: str) -> str | None:
        if obj is None:
            self._write_len(None, stream, context, path)
            return obj
        data = obj.encode("utf-8")
        self._write_len(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj

    def emit_decode(self, g: CodeGen, target: str) -> None:
        n = g.tmp("n")
        self.emit_read_len(g, n)
        if self.nullable:
            g.line(f"if {n} == -1:")
            g.line(f"    {target} = None")
            g.line("else:")
            g.indent()
        e = g.tmp("e")
        g.line(f"{e} = o + {n}")
        g.line(f"if {e} > blen:")
        g.line("    raise DecodeError('truncated string')")
        g.line(f"{target} = str(buf[o:{e}], 'utf-8')")
        g.line(f"o = {e}")
        if self.nullable:
            g.dedent()

    def emit_encode(self, g: CodeGen, expr: str, w: str) -> None:
        s = g.tmp("s")
        g.line(f"{s} = {expr}")
        g.line(f"if {s} is None:")
        g.indent()
        self.emit_write_null(g, w)
        g.dedent()
        g.line("else:")
        g.indent()
        bs = g.tmp("bs")
        g.line(f"{bs} = {s}.encode()")
        self.emit_write_len(g, f"len({bs})", w)
        g.line(f"{w} += {bs}")
        g.dedent()


class KBytes(_Length):
    """Kafka bytes (and records): int32 (classic) or varint N+1 (compact) length."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, Int32sb)

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        n = self._read_len(stream, context, path)
        if n is None:
            return None
        return bytes(stream_read(stream, n, path))

    def _build(self, obj: bytes | None, stream: Any, context: Any, path: str) -> bytes | None:
        if obj is None:
            self._write_len(None, stream, context, path)
            return obj
        self._write_len(len(obj), stream, context, path)
        stream_write(stream, bytes(obj), len(obj), path)
        return obj

    def emit_decode(self, g: CodeGen, target: str) -> None:
        n = g.tmp("n")
        self.emit_read_len(g, n)
        if self.nullable:
            g.line(f"if {n} == -1:")
            g.line(f"    {target} = None")
            g.line("else:")
            g.indent()
        e = g.tmp("e")
        g.line(f"{e} = o + {n}")
        g.line(f"if {e} > blen:")
        g.line("    raise DecodeError('truncated bytes')")
        g.line(f"{target} = buf[o:{e}]")
        g.line(f"o = {e}")
        if self.nullable:
            g.dedent()

    def emit_encode(self, g: CodeGen, expr: str, w: str) -> None:
        s = g.tmp("v")
        g.line(f"{s} = {expr}")
        g.line(f"if {s} is None:")
        g.indent()
        self.emit_write_null(g, w)
        g.dedent()
        g.line("else:")
        g.indent()
        self.emit_write_len(g, f"len({s})", w)
        g.line(f"{w} += {s}")
        g.dedent()


class KArray(_Length):
    """Kafka array: int32 (classic) or varint N+1 (compact) count, then the elements."""

    def __init__(self, element: Construct, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable, Int32sb)
        self.element = element

    def _parse(self, stream: Any, context: Any, path: str) -> list[Any] | None:
        n = self._read_len(stream, context, path)
        if n is None:
            return None
        return [self.element._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj: list[Any] | None, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            self._write_len(None, stream, context, path)
            return obj
        self._write_len(len(obj), stream, context, path)
        for item in obj:
            self.element._build(item, stream, context, path)
        return obj

    def emit_decode(self, g: CodeGen, target: str) -> None:
        n = g.tmp("n")
        self.emit_read_len(g, n)
        if self.nullable:
            g.line(f"if {n} == -1:")
            g.line(f"    {target} = None")
            g.line("else:")
            g.indent()
        # Every element takes at least one byte: refuse counts the buffer cannot hold
        # before allocating anything for them.
        g.line(f"if {n} > blen - o:")
        g.line("    raise DecodeError('array count exceeds remaining bytes')")
        fmt = fixed_format(self.element)
        if fmt in ("i", "q"):
            size = struct.calcsize(">" + fmt)
            reader = "unpack_int32s" if fmt == "i" else "unpack_int64s"
            g.line(f"{target} = {reader}(buf, o, {n})")
            g.line(f"o += {size} * {n}")
        else:
            g.line(f"{target} = []")
            item = g.tmp("x")
            g.line(f"for _ in range({n}):")
            g.indent()
            g.emit_decode(self.element, item)
            g.line(f"{target}.append({item})")
            g.dedent()
        if self.nullable:
            g.dedent()

    def emit_encode(self, g: CodeGen, expr: str, w: str) -> None:
        a = g.tmp("a")
        g.line(f"{a} = {expr}")
        g.line(f"if {a} is None:")
        g.indent()
        self.emit_write_null(g, w)
        g.dedent()
        g.line("else:")
        g.indent()
        self.emit_write_len(g, f"len({a})", w)
        fmt = fixed_format(self.element)
        if fmt in ("i", "q"):
            writer = "pack_int32s" if fmt == "i" else "pack_int64s"
            g.line(f"{w} += {writer}({a})")
        else:
            item = g.tmp("x")
            g.line(f"for {item} in {a}:")
            g.indent()
            g.emit_encode(self.element, item, w)
            g.dedent()
        g.dedent()


class KTaggedField:
    """A known tagged field of a struct (KIP-482): tag, attribute name, codec, default."""

    __slots__ = ("default", "name", "sub", "tag")

    def __init__(self, tag: int, name: str, sub: Construct, default: Any) -> None:
        self.tag = tag
        self.name = name
        self.sub = sub
        self.default = default
