"""Frame surgery for forwarding, sans-IO: only the correlation id of a request or response
changes on the way through; everything after it (record batches included) is copied as
bytes, never decoded."""

from __future__ import annotations

import struct

from protocol.apis import ApiKey

_KEY_VERSION = struct.Struct(">hh")
_CORRELATION = struct.Struct(">i")
_SIZE_CORRELATION = struct.Struct(">ii")

#: APIs about records: forwarded to the upstream (DescribeConfigs only for topics and
#: brokers; a group's configs are ours).
FORWARDED = frozenset(
    {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.METADATA,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.INIT_PRODUCER_ID,
    }
)

#: APIs served only in front of an upstream (the protocol package has their codecs).
UPSTREAM_ONLY = frozenset({ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID})


def key_and_version(frame: bytes) -> tuple[int, int]:
    """A request frame's API key and version (the frame is at least 4 bytes)."""
    key, version = _KEY_VERSION.unpack_from(frame)
    return key, version


def correlation_of(frame: bytes) -> int:
    """A request frame's correlation id (bytes 4-8, after key and version)."""
    return int(_CORRELATION.unpack_from(frame, 4)[0])


def readdressed_request(frame: bytes, correlation_id: int) -> bytes:
    """The request frame with ``correlation_id``, size-prefixed, ready to send upstream."""
    return b"".join(
        (
            _SIZE_CORRELATION.pack(len(frame), 0)[:4],
            frame[:4],
            _CORRELATION.pack(correlation_id),
            frame[8:],
        )
    )


def response_correlation(frame: bytes) -> int:
    """A response frame's correlation id (its first four bytes)."""
    return int(_CORRELATION.unpack_from(frame)[0])


def readdressed_response(frame: bytes, correlation_id: int) -> bytes:
    """The upstream's response frame (without size) as the client's, size-prefixed."""
    return _SIZE_CORRELATION.pack(len(frame), correlation_id) + frame[4:]


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _uvarint(frame: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = frame[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def body_offset(frame: bytes, flexible: bool) -> int:
    """Where a request frame's body starts: after key, version, correlation id, client id
    and (flexible versions) the header's tagged fields."""
    length: int = _INT16.unpack_from(frame, 8)[0]
    offset: int = 10 + max(length, 0)
    if flexible:
        count, offset = _uvarint(frame, offset)
        for _ in range(count):
            _tag, offset = _uvarint(frame, offset)
            size, offset = _uvarint(frame, offset)
            offset += size
    return offset


def produce_acks(frame: bytes, version: int, flexible: bool) -> int:
    """A Produce request frame's acks (v3+: after its transactional id)."""
    offset = body_offset(frame, flexible)
    if flexible:
        length, offset = _uvarint(frame, offset)
        offset += max(length - 1, 0)
    else:
        (length,) = _INT16.unpack_from(frame, offset)
        offset += 2 + max(length, 0)
    return int(_INT16.unpack_from(frame, offset)[0])


def fetch_max_wait_ms(frame: bytes, version: int, flexible: bool) -> int:
    """A Fetch request frame's max wait (after the replica id before v15)."""
    offset = body_offset(frame, flexible) + (4 if version < 15 else 0)
    return int(_INT32.unpack_from(frame, offset)[0])
