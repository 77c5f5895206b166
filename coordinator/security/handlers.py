"""SaslHandshake and SaslAuthenticate, and the raw tokens that follow a v0 handshake.

Served on every listener, as Kafka does; on a listener without SASL they answer
ILLEGAL_SASL_STATE. A failed login is answered after ``failed_authentication_delay_ms`` and
the connection is then closed (Kafka's connection.failed.authentication.delay.ms); past a
few failures later and later (``throttle.FailedLoginThrottle``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog

from protocol.apis import ApiKey
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import ErrorCode

from ..handlers.connection_context import ConnectionContext
from ..handlers.node import Node
from ..handlers.outcome import Delayed, Offloaded, Outcome
from ..handlers.versions import SASL_HANDSHAKE_RAW_TOKENS
from .sasl import AuthenticationFailed, IllegalSaslState, PasswordCheck, SaslSession
from .throttle import Admission

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
    except Refused as exc:
        return _refused(node, conn, exc, exc.delay_ms)
    except IllegalSaslState as exc:
        conn.close_after_reply = True
        return Outcome(
            SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=str(exc)
            )
        )
    if isinstance(step, Checking):
        return _check_password(node, conn, session, step, _plain_answered(node, conn))
    return Outcome(SaslAuthenticateResponse(error_code=0, auth_bytes=step, session_lifetime_ms=0))


class Refused(AuthenticationFailed):
    """A failed login, counted and logged, with how long its answer waits."""

    def __init__(self, exc: AuthenticationFailed, delay_ms: int) -> None:
        super().__init__(str(exc))
        self.delay_ms = delay_ms


@dataclass(frozen=True, slots=True)
class Checking:
    """A PLAIN password to check off the loop, let through by the throttle."""

    check: PasswordCheck
    admission: Admission


def _refused(
    node: Node, conn: ConnectionContext, exc: AuthenticationFailed, delay_ms: int
) -> Outcome[SaslAuthenticateResponse]:
    """SASL_AUTHENTICATION_FAILED after ``delay_ms``; then the connection closes."""
    conn.close_after_reply = True
    failure = SaslAuthenticateResponse(
        error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc)
    )
    return Outcome(Delayed(delay_ms, failure) if delay_ms > 0 else failure)


def _plain_answered(
    node: Node, conn: ConnectionContext
) -> Callable[[Refused | None], Outcome[SaslAuthenticateResponse]]:
    def answer(failure: Refused | None) -> Outcome[SaslAuthenticateResponse]:
        if failure is not None:
            return _refused(node, conn, failure, failure.delay_ms)
        return Outcome(
            SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=0)
        )

    return answer


def _check_password(
    node: Node,
    conn: ConnectionContext,
    session: SaslSession,
    checking: Checking,
    answer: Callable[[Refused | None], Outcome[R]],
) -> Outcome[R]:
    """PLAIN: the key derivation runs off the event loop, admitted by the throttle (which
    counts it as in flight until it ends, so parallel logins cannot all be checked)."""

    def then(matched: bool) -> Outcome[R]:
        try:
            session.finish_plain(checking.check, matched)
        except AuthenticationFailed as exc:
            return answer(_failed(node, conn, session, exc, checking.admission))
        node.security.throttle.finish(checking.admission, True, node.now_ms())
        _succeeded(conn, session)
        return answer(None)

    return Outcome(Offloaded(checking.check.check, then))


def _step(
    node: Node, conn: ConnectionContext, session: SaslSession, token: bytes
) -> bytes | Checking:
    """One SASL token in, the server's token out (or a PLAIN password still to check);
    marks the connection authenticated when the exchange completes. Raises Refused,
    already counted and logged."""
    throttle = node.security.throttle
    admission: Admission | None = None
    try:
        # SCRAM's second message proves the password: admitted by the throttle first.
        if session.claimed_username is not None:
            admission = _admit(node, conn, session.claimed_username)
        step = session.step(token)
        # PLAIN: the user is known once the token is parsed; the password is checked later.
        if isinstance(step, PasswordCheck):
            return Checking(step, _admit(node, conn, step.username))
    except Refused:
        raise
    except AuthenticationFailed as exc:
        raise _failed(node, conn, session, exc, admission) from None
    if admission is not None:
        throttle.finish(admission, step.complete, node.now_ms())
    if step.complete:
        _succeeded(conn, session)
    return step.response


def _admit(node: Node, conn: ConnectionContext, user: str) -> Admission:
    """Raises Refused, unchecked and not counted, while another login of ``user`` from
    this address past the allowance is being checked or answered."""
    admission = node.security.throttle.admit(_address(conn), user, node.now_ms())
    if admission is None:
        log.info("login throttled", peer=conn.client_host, user=user)
        raise Refused(
            AuthenticationFailed(
                "Authentication failed: another login of this user from this address is"
                " being checked: retry after its answer"
            ),
            node.security.settings.failed_authentication_delay_ms,
        )
    return admission


def _failed(
    node: Node,
    conn: ConnectionContext,
    session: SaslSession,
    exc: AuthenticationFailed,
    admission: Admission | None,
) -> Refused:
    """Counts and logs a failure; the refusal to answer, with its delay."""
    delay_ms = node.security.settings.failed_authentication_delay_ms
    if admission is not None:
        delay_ms = node.security.throttle.finish(admission, False, node.now_ms())
    log.warning(
        "authentication failed",
        peer=conn.client_host,
        user=session.claimed_username,
        mechanism=session.mechanism,
        listener=conn.listener.name if conn.listener else None,
        reason=str(exc),
        answered_after_ms=delay_ms,
    )
    return Refused(exc, delay_ms)


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
    if isinstance(step, Checking):
        return _check_password(node, conn, session, step, _raw_answer)
    return Outcome(step)


def _raw_answer(failure: Refused | None) -> Outcome[bytes | None]:
    return Outcome(None if failure is not None else b"")


def _address(conn: ConnectionContext) -> str:
    return conn.client_host.lstrip("/")
