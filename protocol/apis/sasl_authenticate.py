"""SaslAuthenticate (36): one SASL token each way, wrapped in Kafka framing (KIP-152)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, f, message


@message(api_key=36, valid="0-2", flexible="2+")
@dataclass(slots=True, kw_only=True)
class SaslAuthenticateRequest(Struct):
    auth_bytes: bytes = f("bytes")


@message(api_key=36, valid="0-2", flexible="2+")
@dataclass(slots=True, kw_only=True)
class SaslAuthenticateResponse(Struct):
    error_code: int = f("int16")
    error_message: str | None = f("string", nullable="0+", default=None)
    auth_bytes: bytes = f("bytes")
    # KIP-368: 0 means the session does not expire (no re-authentication required).
    session_lifetime_ms: int = f("int64", "1+", ignorable=True)
