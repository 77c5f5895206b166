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
#: Sessions kept at once, all users together (the oldest is dropped past this)...
MAX_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class Session:
    principal: str
    expires_s: float


class Sessions:
    """Login sessions, in memory. Each user holds at most ``per_user`` (a new login ends
    that user's oldest), so one user logging in again and again cannot push another's
    session out of the global bound."""

    def __init__(self, per_user: int = 32) -> None:
        self.per_user = per_user
        self._by_token: dict[str, Session] = {}
        self._by_user: dict[str, dict[str, None]] = {}  # principal -> its tokens, oldest first

    def start(self, username: str) -> str:
        principal = f"User:{username}"
        mine = self._by_user.setdefault(principal, {})
        while len(mine) >= self.per_user:
            self.end(next(iter(mine)))
        while len(self._by_token) >= MAX_SESSIONS:
            self.end(next(iter(self._by_token)))
        token = secrets.token_urlsafe(32)
        self._by_token[token] = Session(principal, time.monotonic() + SESSION_S)
        self._by_user.setdefault(principal, {})[token] = None
        return token

    def principal(self, token: str | None) -> str | None:
        if not token:
            return None
        session = self._by_token.get(token)
        if session is None:
            return None
        if session.expires_s < time.monotonic():
            self.end(token)
            return None
        return session.principal

    def end(self, token: str | None) -> None:
        session = self._by_token.pop(token, None) if token else None
        if token and session is not None:
            mine = self._by_user.get(session.principal, {})
            mine.pop(token, None)
            if not mine:
                self._by_user.pop(session.principal, None)


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
