"""One client connection's protocol, sans-IO: a request frame in, what to do with it out.

The socket side (``server.py``) splits bytes into frames, keeps responses in order and
applies back-pressure; everything a frame means for the connection is decided here:
malformed and unknown requests close it, an ApiVersions request at a version we do not
serve gets KIP-511's v0 answer, a SASL listener lets nothing but ApiVersions and the SASL
APIs through before authentication, and after a v0 SaslHandshake frames are bare SASL
tokens (KIP-43).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from protocol.apis import API_VERSIONS_KEY, BY_KEY, Api
from protocol.apis.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.errors import DecodeError, ErrorCode
from protocol.frames import (
    Request,
    UnknownApi,
    UnsupportedVersion,
    decode_request,
    encode_response,
)
from protocol.schema import Struct

from ..handlers.connection_context import ConnectionContext
from ..security.handlers import PRE_AUTHENTICATION_APIS

_CORRELATION = struct.Struct(">i")
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class RawSaslToken:
    """A bare SASL token (after a v0 SaslHandshake): answer it with ``raw_response``."""

    token: bytes


@dataclass(frozen=True, slots=True)
class SendNow:
    """Bytes to send in order, with no handler involved."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Refuse:
    """Close the connection (after the responses already due)."""

    reason: str


#: What to do with a frame: a ``Request`` goes to the dispatcher.
Action = Request | RawSaslToken | SendNow | Refuse


class ConnectionProtocol:
    def __init__(self, conn: ConnectionContext, served: Callable[[int], bool]) -> None:
        self.conn = conn
        self._served = served

    def receive(self, frame: bytes) -> Action:
        conn = self.conn
        if conn.sasl_raw_tokens and not conn.authenticated:
            return RawSaslToken(frame)
        try:
            request = decode_request(frame)
        except UnsupportedVersion as exc:
            if exc.api.key == API_VERSIONS_KEY:
                return _unsupported_api_versions(frame)
            return Refuse(str(exc))
        except UnknownApi as exc:
            return Refuse(str(exc))
        except DecodeError as exc:
            return Refuse(f"malformed request: {exc}")
        api = request.api
        if not self._served(api.key):
            return Refuse(f"{api.name} is not served by this node")
        if not conn.authenticated and api.key not in PRE_AUTHENTICATION_APIS:
            # As Kafka: anything else before authentication ends the connection.
            return Refuse(f"{api.name} before SASL authentication")
        conn.client_id = request.header.client_id or ""
        return request

    @staticmethod
    def response(request: Request, body: Struct) -> bytes:
        return response_frame(request.api, request.version, request.header.correlation_id, body)

    @staticmethod
    def raw_response(token: bytes) -> bytes:
        return _LENGTH.pack(len(token)) + token


def response_frame(api: Api, version: int, correlation_id: int, body: Struct) -> bytes:
    """The response frame to a request of ``api`` at ``version`` (every response the
    connection sends goes through here)."""
    return encode_response(api, version, correlation_id, body)


def _unsupported_api_versions(frame: bytes) -> SendNow | Refuse:
    # KIP-511: answer in the v0 format, with ApiVersions' own range, so the client can
    # retry at a version we support.
    if len(frame) < 8:
        return Refuse("ApiVersions request too short to answer")
    (correlation_id,) = _CORRELATION.unpack_from(frame, 4)
    api = BY_KEY[API_VERSIONS_KEY]
    body = ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[
            ApiVersionsResponseApiVersion(
                api_key=api.key, min_version=api.min_version, max_version=api.max_version
            )
        ],
    )
    return SendNow(encode_response(api, 0, correlation_id, body))
