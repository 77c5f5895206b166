"""SaslHandshake (17): the client names its SASL mechanism; the server lists what it enables.

v0 is the legacy framing (raw SASL tokens follow, without Kafka headers); v1 tells the server
that the tokens follow as SaslAuthenticate requests (KIP-152).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=17, valid="0-1", flexible="none")
@dataclass(slots=True, kw_only=True)
class SaslHandshakeRequest(Struct):
    mechanism: str = f("string")


@message(api_key=17, valid="0-1", flexible="none")
@dataclass(slots=True, kw_only=True)
class SaslHandshakeResponse(Struct):
    error_code: int = f("int16")
    mechanisms: list[str] = f(array("string"))
