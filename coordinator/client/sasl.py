"""SASL authentication of a new connection (SaslHandshake v1, then SaslAuthenticate v2
tokens): PLAIN, or SCRAM-SHA-256/512 through ``scramp``, as Kafka's clients do it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from scramp import ScramClient, ScramException

from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import ErrorCode
from protocol.schema import Struct

from .errors import KafkaClientError

if TYPE_CHECKING:
    from .security import ClientSecurity

T = TypeVar("T", bound=Struct)


class Requester(Protocol):
    """What a login needs of its connection (``connection.KafkaConnectionClient``): requests
    answered. A protocol, so that the connection imports this module and nothing imports back."""

    async def request(
        self, body: Struct, version: int, response_type: type[T] | None = None
    ) -> T: ...


class AuthenticationFailed(KafkaClientError):
    """The broker refused the login; the message is one line naming the listener, the
    mechanism and the user."""


async def authenticate(conn: Requester, security: ClientSecurity, where: str) -> None:
    mechanism, user = security.mechanism, security.username
    assert mechanism is not None and user is not None and security.password is not None
    said = f"{where} ({security.protocol}, SASL mechanism {mechanism}, user {user!r})"
    hs = await conn.request(SaslHandshakeRequest(mechanism=mechanism), 1, SaslHandshakeResponse)
    if hs.error_code != ErrorCode.NONE:
        offered = ", ".join(hs.mechanisms) or "none"
        raise AuthenticationFailed(
            f"{said}: the listener does not offer {mechanism} (it offers {offered})"
        )

    async def step(token: bytes) -> bytes:
        answer = await conn.request(
            SaslAuthenticateRequest(auth_bytes=token), 2, SaslAuthenticateResponse
        )
        if answer.error_code != ErrorCode.NONE:
            name = ErrorCode(answer.error_code).name
            why = answer.error_message or f"authentication failed ({name})"
            raise AuthenticationFailed(f"{said}: {why}")
        return bytes(answer.auth_bytes)

    if mechanism == "PLAIN":
        await step(f"\0{user}\0{security.password}".encode())
        return
    scram = ScramClient([mechanism], user, security.password)
    try:
        scram.set_server_first((await step(scram.get_client_first().encode())).decode())
        # The server's last message proves it knows the user's key: checked too.
        scram.set_server_final((await step(scram.get_client_final().encode())).decode())
    except (ScramException, UnicodeDecodeError) as exc:
        raise AuthenticationFailed(f"{said}: the broker's SCRAM answer is wrong: {exc}") from None
