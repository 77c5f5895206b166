"""Logging in to the console with the daemon's SASL accounts (when ACLs are enabled).

A login is a SASL PLAIN check of the user's password against the same SCRAM credential the
Kafka listeners use (``users add``), run off the event loop (the key derivation costs
milliseconds), with a failed-login limiter of the same limits but counts of its own. A
successful login gets a random session cookie; the session lives in memory only, so a
restart logs everyone out.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass

from ..security.config import SCRAM_MECHANISMS
from ..security.credentials import ScramCredential, make_credential, password_matches
from ..security.runtime import Security
from ..security.sasl import FailedLoginLimiter

COOKIE = "gc_console"
#: A session ends this long after its login.
SESSION_S = 8 * 3600
#: Sessions kept at once (the oldest is dropped past this).
MAX_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class Session:
    principal: str
    expires_s: float


class Sessions:
    def __init__(self) -> None:
        self._by_token: dict[str, Session] = {}

    def start(self, username: str) -> str:
        if len(self._by_token) >= MAX_SESSIONS:
            del self._by_token[next(iter(self._by_token))]
        token = secrets.token_urlsafe(32)
        self._by_token[token] = Session(f"User:{username}", time.monotonic() + SESSION_S)
        return token

    def principal(self, token: str | None) -> str | None:
        if not token:
            return None
        session = self._by_token.get(token)
        if session is None:
            return None
        if session.expires_s < time.monotonic():
            del self._by_token[token]
            return None
        return session.principal

    def end(self, token: str | None) -> None:
        if token:
            self._by_token.pop(token, None)


_NOBODY: list[ScramCredential] = []


def _nobody() -> ScramCredential:
    """A credential no password matches, made once, at the default cost."""
    if not _NOBODY:
        _NOBODY.append(make_credential("", secrets.token_hex(16), SCRAM_MECHANISMS[0]))
    return _NOBODY[0]


async def check_password(
    security: Security,
    limiter: FailedLoginLimiter,
    address: str,
    username: str,
    password: str,
    now_ms: int,
) -> bool:
    """Whether ``username``/``password`` is a valid SASL account (PLAIN's check). Failures
    count against the address in ``limiter`` (the console's own, apart from the Kafka
    listeners'); past its limit nothing is checked."""
    if limiter.blocked(address, username, now_ms):
        return False
    credential = None
    for mechanism in SCRAM_MECHANISMS:
        credential = credential or security.credential(username, mechanism)
    # An unknown user costs what a known one costs, so the answer's time tells nothing.
    checked = credential or _nobody()
    limiter.check_started(address, username)
    try:
        matched = await asyncio.get_running_loop().run_in_executor(
            None, password_matches, checked, password
        )
    finally:
        limiter.check_ended(address, username)
    ok = matched and credential is not None
    if not ok:
        limiter.record_failure(address, username, now_ms)
        # connection.failed.authentication.delay.ms, as a Kafka listener answers a failure.
        await asyncio.sleep(security.settings.failed_authentication_delay_ms / 1000)
    return ok
