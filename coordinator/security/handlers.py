"""SaslHandshake and SaslAuthenticate, and the raw tokens that follow a v0 handshake.

Served on every listener, as Kafka does; on a listener without SASL they answer
ILLEGAL_SASL_STATE. A failed login is answered after ``failed_authentication_delay_ms`` and
the connection is then closed (Kafka's connection.failed.authentication.delay.ms).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import ErrorCode
from protocol.frames import Request

from ..handlers.reply import Deferred, Reply
from .sasl import AuthenticationFailed, IllegalSaslState, PasswordCheck, SaslSession

if TYPE_CHECKING:
    from ..broker import Broker, ConnectionContext

log = structlog.get_logger("security")

#: What an unauthenticated client may send on a SASL listener (anything else closes it).
PRE_AUTHENTICATION_APIS = frozenset({18, 17, 36})  # ApiVersions, SaslHandshake, SaslAuthenticate


def _session(b: Broker, ctx: ConnectionContext) -> SaslSession | None:
    if ctx.listener is None or not ctx.listener.protocol.uses_sasl or ctx.authenticated:
        return None
    if ctx.sasl is None:
        ctx.sasl = SaslSession(b.security.settings.sasl_enabled_mechanisms, b.security.credential)
    return ctx.sasl


def sasl_handshake(b: Broker, req: Request, ctx: ConnectionContext) -> Reply:
    body = req.body
    assert isinstance(body, SaslHandshakeRequest)
    session = _session(b, ctx)
    enabled = list(b.security.settings.sasl_enabled_mechanisms)
    if session is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled)
    error = session.handshake(body.mechanism)
    if error:
        log.info("sasl handshake refused", peer=ctx.client_host, mechanism=body.mechanism)
        ctx.close_after_reply = True
    elif req.version == 0:
        ctx.sasl_raw_tokens = True  # KIP-43 framing: bare length-prefixed tokens follow
    return SaslHandshakeResponse(error_code=error, mechanisms=enabled)


def sasl_authenticate(b: Broker, req: Request, ctx: ConnectionContext) -> Reply:
    body = req.body
    assert isinstance(body, SaslAuthenticateRequest)
    session = _session(b, ctx)
    if session is None or session.mechanism is None or ctx.sasl_raw_tokens:
        ctx.close_after_reply = True
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate is not expected now",
        )
    try:
        step = _step(b, ctx, session, body.auth_bytes)
        if isinstance(step, PasswordCheck):
            # PLAIN: the key derivation runs in a thread, not on the event loop. Counted
            # as in flight from now, so parallel logins cannot all pass the limiter.
            b.security.limiter.check_started(_address(ctx), step.username)
            return Deferred(b.loop.create_task(_plain_login(b, ctx, session, step)), _same)
    except AuthenticationFailed as exc:
        return _refused(b, ctx, exc)
    except IllegalSaslState as exc:
        ctx.close_after_reply = True
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=str(exc)
        )
    return SaslAuthenticateResponse(error_code=0, auth_bytes=step, session_lifetime_ms=0)


def _same(response: SaslAuthenticateResponse) -> SaslAuthenticateResponse:
    return response


def _refused(b: Broker, ctx: ConnectionContext, exc: AuthenticationFailed) -> Reply:
    """SASL_AUTHENTICATION_FAILED after the configured delay; then the connection closes."""
    ctx.close_after_reply = True
    failure = SaslAuthenticateResponse(
        error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc)
    )
    delay_ms = b.security.settings.failed_authentication_delay_ms
    return Deferred.after(b, delay_ms / 1000, failure) if delay_ms > 0 else failure


async def _plain_login(
    b: Broker, ctx: ConnectionContext, session: SaslSession, check: PasswordCheck
) -> SaslAuthenticateResponse:
    try:
        matched = await b.loop.run_in_executor(None, check.check)
    finally:
        b.security.limiter.check_ended(_address(ctx), check.username)
    try:
        session.finish_plain(check, matched)
    except AuthenticationFailed as exc:
        _failed(b, ctx, session, exc)
        ctx.close_after_reply = True
        await asyncio.sleep(b.security.settings.failed_authentication_delay_ms / 1000)
        return SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc)
        )
    _succeeded(ctx, session)
    return SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=0)


def _step(
    b: Broker, ctx: ConnectionContext, session: SaslSession, token: bytes
) -> bytes | PasswordCheck:
    """One SASL token in, the server's token out (or a PLAIN password still to check);
    marks the connection authenticated when the exchange completes. Raises
    AuthenticationFailed, already counted and logged."""
    limiter = b.security.limiter
    try:
        # SCRAM's second message proves the password: refuse it before checking when the
        # user named in the first is blocked (a refusal must not say whether it was right).
        if session.claimed_username is not None and limiter.blocked(
            _address(ctx), session.claimed_username, b.now_ms()
        ):
            raise _too_many()
        step = session.step(token)
        # PLAIN: the user is known once the token is parsed; the password is checked later.
        if isinstance(step, PasswordCheck) and limiter.blocked(
            _address(ctx), step.username, b.now_ms()
        ):
            raise _too_many()
    except AuthenticationFailed as exc:
        _failed(b, ctx, session, exc)
        raise
    if isinstance(step, PasswordCheck):
        return step
    if step.complete:
        _succeeded(ctx, session)
    return step.response


def _failed(
    b: Broker, ctx: ConnectionContext, session: SaslSession, exc: AuthenticationFailed
) -> None:
    b.security.limiter.record_failure(_address(ctx), session.claimed_username or "", b.now_ms())
    log.warning(
        "authentication failed",
        peer=ctx.client_host,
        mechanism=session.mechanism,
        listener=ctx.listener.name if ctx.listener else None,
        reason=str(exc),
    )


def _succeeded(ctx: ConnectionContext, session: SaslSession) -> None:
    assert session.principal is not None
    ctx.principal = session.principal
    ctx.authenticated = True
    log.info(
        "authenticated",
        peer=ctx.client_host,
        principal=session.principal,
        mechanism=session.mechanism,
    )


def raw_token(b: Broker, ctx: ConnectionContext, token: bytes) -> bytes | None:
    """A bare token after a v0 SaslHandshake: the server's bare token, or None to close
    (the v0 framing has no way to carry an error)."""
    session = ctx.sasl
    if session is None:
        return None
    try:
        step = _step(b, ctx, session, token)
    except (AuthenticationFailed, IllegalSaslState):
        return None
    if not isinstance(step, PasswordCheck):
        return step
    try:  # the legacy path checks the password in line
        session.finish_plain(step, step.check())
    except AuthenticationFailed as exc:
        _failed(b, ctx, session, exc)
        return None
    _succeeded(ctx, session)
    return b""


def _too_many() -> AuthenticationFailed:
    return AuthenticationFailed(
        "Authentication failed: too many failed attempts for this user from this address"
    )


def _address(ctx: ConnectionContext) -> str:
    return ctx.client_host.lstrip("/")
