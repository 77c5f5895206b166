"""Request and response headers (spec 1.3).

Request header v1 = api key, api version, correlation id, client id; v2 adds a tagged-field
section. The client id is always an int16-length string, even in v2. Response header v0 is
the correlation id; v1 adds a tagged-field section. The header version follows the API
version's flexibility, except that ApiVersions responses always use response header v0
(KIP-511), so a client that sent a too-new ApiVersions can still read the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .schema import Struct, f, message


@message(valid="1-2", flexible="2+")
@dataclass(slots=True, kw_only=True)
class RequestHeader(Struct):
    request_api_key: int = f("int16")
    request_api_version: int = f("int16")
    correlation_id: int = f("int32")
    client_id: str | None = f("string", "1+", nullable="1+", classic=True)


@message(valid="0-1", flexible="1+")
@dataclass(slots=True, kw_only=True)
class ResponseHeader(Struct):
    correlation_id: int = f("int32")
