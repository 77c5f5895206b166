"""Tiny field writers for hand-built golden bytes, independent of the codecs under test."""

from __future__ import annotations

import struct


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def s(text: str | None) -> bytes:
    """Classic string: int16 length (-1 = null) then UTF-8."""
    return i16(-1) if text is None else i16(len(text.encode())) + text.encode()


def b(data: bytes | None) -> bytes:
    """Classic bytes: int32 length (-1 = null) then the bytes."""
    return i32(-1) if data is None else i32(len(data)) + data


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def cs(text: str | None) -> bytes:
    """Compact string: unsigned varint length + 1 (0 = null) then UTF-8."""
    return b"\x00" if text is None else uvarint(len(text.encode()) + 1) + text.encode()


def cb(data: bytes) -> bytes:
    """Compact bytes: unsigned varint length + 1 then the bytes."""
    return uvarint(len(data) + 1) + data


NO_TAGS = b"\x00"  # an empty tagged-field section
