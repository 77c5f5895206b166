"""Frames: splitting a byte stream into size-prefixed frames, and request/response envelopes.

A frame is ``int32 size`` + header + body (spec 1.1). ``FrameSplitter`` is sans-IO: feed it
bytes as they arrive and it returns complete frames; a size over the limit is refused as
soon as its four bytes are seen, before any of the body is buffered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from . import codec
from .apis import BY_KEY, Api
from .codegen import Decoder, Encoder
from .errors import DecodeError, EncodeError
from .headers import RequestHeader, ResponseHeader
from .schema import Struct

DEFAULT_MAX_FRAME_BYTES = 104857600  # socket.request.max.bytes

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


class FrameTooLarge(DecodeError):
    """A frame's declared size is over the limit (or negative)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes refused (limit {limit})")
        self.size = size
        self.limit = limit


class UnknownApi(DecodeError):
    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown api key {api_key}")
        self.api_key = api_key


class UnsupportedVersion(DecodeError):
    def __init__(self, api: Api, version: int, header: RequestHeader | None) -> None:
        super().__init__(f"{api.name} v{version} is not supported")
        self.api = api
        self.version = version
        self.header = header


class FrameSplitter:
    """Turns a byte stream into frames (without their size prefix)."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        if not self._buf and isinstance(data, bytes):
            # Nothing buffered (the common case: reads end on frame boundaries): frames
            # are sliced from ``data`` itself, one copy each, and only a tail is buffered.
            frames, used = self._split(data)
            if used < len(data):
                self._buf += data[used:]
            return frames
        buf = self._buf
        buf += data
        frames, used = self._split(buf)
        if used:
            del buf[:used]
        return frames

    def _split(self, buf: bytes | bytearray) -> tuple[list[bytes], int]:
        """The complete frames at the start of ``buf``, and how many bytes they take."""
        frames: list[bytes] = []
        start = 0
        end = len(buf)
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(buf, start)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameTooLarge(size, self.max_frame_bytes)
            if end - start - 4 < size:
                break
            frames.append(bytes(buf[start + 4 : start + 4 + size]))  # bytes of bytes: no copy
            start += 4 + size
        return frames, start


@dataclass(slots=True)
class Request:
    api: Api
    header: RequestHeader
    body: Struct

    @property
    def version(self) -> int:
        return self.header.request_api_version


# Per (api key, version): the API and its compiled header and body decoders, so a request
# costs one dict lookup before its bytes are read (the hot path: one per request served).
_REQUEST_PLANS: dict[tuple[int, int], tuple[Api, Decoder, Decoder]] = {}


def decode_request(frame: bytes) -> Request:
    """Decode a request frame (without size prefix).

    Raises ``UnknownApi`` or ``UnsupportedVersion`` (both ``DecodeError``s) for keys and
    versions this package does not know, and ``DecodeError`` for malformed bytes.
    """
    if len(frame) < 4:
        raise DecodeError("request frame shorter than its header")
    key, version = _KEY_VERSION.unpack_from(frame)
    plan = _REQUEST_PLANS.get((key, version))
    if plan is None:
        api = BY_KEY.get(key)
        if api is None:
            raise UnknownApi(key)
        if not api.supports(version):
            header = None
            try:
                header, _ = codec.read(RequestHeader, frame, 0, 1)
            except DecodeError:
                pass
            raise UnsupportedVersion(api, version, header)
        header_dec = codec.compiled(RequestHeader, api.request_header_version(version))[0]
        plan = _REQUEST_PLANS[(key, version)] = (
            api,
            header_dec,
            codec.compiled(api.request, version)[0],
        )
    api, header_dec, body_dec = plan
    size = len(frame)
    try:
        header, offset = header_dec(frame, 0, size)
        body, end = body_dec(frame, offset, size)
    except DecodeError:
        raise
    except codec.DECODE_FAULTS as exc:
        raise DecodeError(f"malformed {api.name} v{version} request: {exc!r}") from exc
    if end != size:
        raise DecodeError(f"{size - end} trailing bytes after {api.name} v{version}")
    return Request(api, header, body)


def _framed(write_body: bytearray) -> bytes:
    _SIZE.pack_into(write_body, 0, len(write_body) - 4)
    return bytes(write_body)


def encode_request(
    body: Struct, version: int, correlation_id: int, client_id: str | None = None
) -> bytes:
    """A size-prefixed request frame."""
    assert body.kafka is not None and body.kafka.api_key is not None
    api = BY_KEY[body.kafka.api_key]
    header = RequestHeader(
        request_api_key=api.key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    w = bytearray(4)
    codec.write(header, api.request_header_version(version), w)
    codec.write(body, version, w)
    return _framed(w)


# Per (api key, version): whether the response header has a tagged-field section (v1),
# and the compiled body encoder. The header is only the correlation id (and an empty tag
# section), so it is packed directly rather than through a header object.
_RESPONSE_PLANS: dict[tuple[int, int], tuple[bool, Encoder]] = {}
_SIZE_AND_CORRELATION = struct.Struct(">ii")


def encode_response(api: Api, version: int, correlation_id: int, body: Struct) -> bytes:
    """A size-prefixed response frame."""
    plan = _RESPONSE_PLANS.get((api.key, version))
    if plan is None:
        tagged = api.response_header_version(version) == 1
        plan = _RESPONSE_PLANS[(api.key, version)] = (
            tagged,
            codec.compiled(api.response, version)[1],
        )
    tagged, body_enc = plan
    w = bytearray(9 if tagged else 8)  # size, correlation id, and an empty tag section
    try:
        body_enc(body, w)
    except EncodeError:
        raise
    except codec.ENCODE_FAULTS as exc:
        raise EncodeError(f"cannot encode {type(body).__name__} v{version}: {exc!r}") from exc
    _SIZE_AND_CORRELATION.pack_into(w, 0, len(w) - 4, correlation_id)
    return bytes(w)


def decode_response(api: Api, version: int, frame: bytes) -> tuple[int, Struct]:
    """Decode a response frame (without size prefix): (correlation id, body)."""
    header, offset = codec.read(ResponseHeader, frame, 0, api.response_header_version(version))
    body, end = codec.read(api.response, frame, offset, version)
    if end != len(frame):
        raise DecodeError(f"{len(frame) - end} trailing bytes after {api.name} v{version}")
    return header.correlation_id, body
