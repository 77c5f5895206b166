"""SaslHandshake and SaslAuthenticate, and the raw tokens that follow a v0 handshake.

Served on every listener, as Kafka does; on a listener without SASL they answer
ILLEGAL_SASL_STATE. A failed login is answered after ``failed_authentication_delay_ms`` and
the connection is then closed (Kafka's connection.failed.authentication.delay.ms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import structlog

from protocol.apis import ApiKey
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import ErrorCode

from ..connection_context import ConnectionContext
from ..handlers.outcome import Delayed, Offloaded, Outcome
from ..handlers.versions import SASL_HANDSHAKE_RAW_TOKENS
from ..node import Node
from .sasl import AuthenticationFailed, IllegalSaslState, PasswordCheck, SaslSession

log = structlog.get_logger("security")

R = TypeVar("R")

#: What an unauthenticated client may send on a SASL listener (anything else closes it).
PRE_AUTHENTICATION_APIS = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)


def _session(node: Node, conn: ConnectionContext) -> SaslSession | None:
    if conn.listener is None or not conn.listener.protocol.uses_sasl or conn.authenticated:
        return None
    if conn.sasl is None:
        conn.sasl = SaslSession(
            node.security.settings.sasl_enabled_mechanisms, node.security.credential
        )
    return conn.sasl


def sasl_handshake(
    node: Node, body: SaslHandshakeRequest, version: int, conn: ConnectionContext
) -> Outcome[SaslHandshakeResponse]:
    session = _session(node, conn)
    enabled = list(node.security.settings.sasl_enabled_mechanisms)
    if session is None:
        return Outcome(
            SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled)
        )
    error = session.handshake(body.mechanism)
    if error:
        log.info("sasl handshake refused", peer=conn.client_host, mechanism=body.mechanism)
        conn.close_after_reply = True
    elif version == SASL_HANDSHAKE_RAW_TOKENS:
        conn.sasl_raw_tokens = True  # KIP-43 framing: bare length-prefixed tokens follow
    return Outcome(SaslHandshakeResponse(error_code=error, mechanisms=enabled))


def sasl_authenticate(
    node: Node, body: SaslAuthenticateRequest, version: int, conn: ConnectionContext
) -> Outcome[SaslAuthenticateResponse]:
    session = _session(node, conn)
    if session is None or session.mechanism is None or conn.sasl_raw_tokens:
        conn.close_after_reply = True
        return Outcome(
            SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="SaslAuthenticate is not expected now",
            )
        )
    try:
        step = _step(node, conn, session, body.auth_bytes)
    except AuthenticationFailed as exc:
        return _refused(node, conn, exc)
    except IllegalSaslState as exc:
        conn.close_after_reply = True
        return Outcome(
            SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=str(exc)
            )
        )
    if isinstance(step, PasswordCheck):
        return _check_password(node, conn, session, step, _plain_answered(node, conn))
    return Outcome(SaslAuthenticateResponse(error_code=0, auth_bytes=step, session_lifetime_ms=0))


def _refused(
    node: Node, conn: ConnectionContext, exc: AuthenticationFailed
) -> Outcome[SaslAuthenticateResponse]:
    """SASL_AUTHENTICATION_FAILED after the configured delay; then the connection closes."""
    conn.close_after_reply = True
    failure = SaslAuthenticateResponse(
        error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc)
    )
    delay_ms = node.security.settings.failed_authentication_delay_ms
    return Outcome(Delayed(delay_ms, failure) if delay_ms > 0 else failure)


def _plain_answered(
    node: Node, conn: ConnectionContext
) -> Callable[[AuthenticationFailed | None], Outcome[SaslAuthenticateResponse]]:
    def answer(failure: AuthenticationFailed | None) -> Outcome[SaslAuthenticateResponse]:
        if failure is not None:
            return _refused(node, conn, failure)
        return Outcome(
            SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=0)
        )

    return answer


def _check_password(
    node: Node,
    conn: ConnectionContext,
    session: SaslSession,
    check: PasswordCheck,
    answer: Callable[[AuthenticationFailed | None], Outcome[R]],
) -> Outcome[R]:
    """PLAIN: the key derivation runs off the event loop. Counted as in flight from now,
    so parallel logins cannot all pass the limiter."""
    limiter = node.security.limiter
    limiter.check_started(_address(conn), check.username)

    def then(matched: bool) -> Outcome[R]:
        limiter.check_ended(_address(conn), check.username)
        try:
            session.finish_plain(check, matched)
        except AuthenticationFailed as exc:
            _failed(node, conn, session, exc)
            return answer(exc)
        _succeeded(conn, session)
        return answer(None)

    return Outcome(Offloaded(check.check, then))


def _step(
    node: Node, conn: ConnectionContext, session: SaslSession, token: bytes
) -> bytes | PasswordCheck:
    """One SASL token in, the server's token out (or a PLAIN password still to check);
    marks the connection authenticated when the exchange completes. Raises
    AuthenticationFailed, already counted and logged."""
    limiter = node.security.limiter
    try:
        # SCRAM's second message proves the password: refuse it before checking when the
        # user named in the first is blocked (a refusal must not say whether it was right).
        if session.claimed_username is not None and (
            why := limiter.blocked_by(_address(conn), session.claimed_username, node.now_ms())
        ):
            raise _too_many(why)
        step = session.step(token)
        # PLAIN: the user is known once the token is parsed; the password is checked later.
        if isinstance(step, PasswordCheck) and (
            why := limiter.blocked_by(_address(conn), step.username, node.now_ms())
        ):
            raise _too_many(why)
    except AuthenticationFailed as exc:
        _failed(node, conn, session, exc)
        raise
    if isinstance(step, PasswordCheck):
        return step
    if step.complete:
        _succeeded(conn, session)
    return step.response


def _failed(
    node: Node, conn: ConnectionContext, session: SaslSession, exc: AuthenticationFailed
) -> None:
    node.security.limiter.record_failure(
        _address(conn), session.claimed_username or "", node.now_ms()
    )
    log.warning(
        "authentication failed",
        peer=conn.client_host,
        mechanism=session.mechanism,
        listener=conn.listener.name if conn.listener else None,
        reason=str(exc),
    )


def _succeeded(conn: ConnectionContext, session: SaslSession) -> None:
    assert session.principal is not None
    conn.principal = session.principal
    conn.authenticated = True
    log.info(
        "authenticated",
        peer=conn.client_host,
        principal=session.principal,
        mechanism=session.mechanism,
    )


def raw_token(node: Node, conn: ConnectionContext, token: bytes) -> Outcome[bytes | None]:
    """A bare token after a v0 SaslHandshake: the server's bare token, or None to close
    (the v0 framing has no way to carry an error)."""
    session = conn.sasl
    if session is None:
        return Outcome(None)
    try:
        step = _step(node, conn, session, token)
    except (AuthenticationFailed, IllegalSaslState):
        return Outcome(None)
    if isinstance(step, PasswordCheck):
        return _check_password(node, conn, session, step, _raw_answer)
    return Outcome(step)


def _raw_answer(failure: AuthenticationFailed | None) -> Outcome[bytes | None]:
    return Outcome(None if failure is not None else b"")


def _too_many(why: str) -> AuthenticationFailed:
    """``why``: "user" (this user's failures from this address) or "address" (failures of
    any user names from it): the message must not blame a user for others' failures."""
    if why == "user":
        return AuthenticationFailed(
            "Authentication failed: too many failed attempts for this user from this address"
        )
    return AuthenticationFailed("Authentication failed: too many failed attempts from this address")


def _address(conn: ConnectionContext) -> str:
    return conn.client_host.lstrip("/")
