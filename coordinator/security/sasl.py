"""The server side of one connection's SASL exchange, without I/O.

``SaslSession.handshake`` takes the mechanism the client names (SaslHandshake);
``SaslSession.step`` takes each token the client sends (SaslAuthenticate, or a raw frame after
a v0 handshake) and returns the server's token. A failure raises ``AuthenticationFailed``,
whose message is safe to send and log: it never carries a password, proof or nonce.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scramp import ScramException, ScramMechanism

from protocol.errors import ErrorCode

from .config import SCRAM_MECHANISMS
from .credentials import ScramCredential, make_credential, password_matches

#: (username, mechanism) -> credential, or None for an unknown user.
CredentialLookup = Callable[[str, str], ScramCredential | None]


class AuthenticationFailed(Exception):
    """SASL_AUTHENTICATION_FAILED, with a message fit for the client and the log."""


@dataclass(frozen=True, slots=True)
class SaslStep:
    response: bytes
    complete: bool


@dataclass(frozen=True, slots=True)
class PasswordCheck:
    """A PLAIN login waiting for its password check: deriving the key costs milliseconds
    (PBKDF2), so the caller may run ``check()`` off the event loop, then ``finish_plain``."""

    username: str
    credential: ScramCredential
    password: str = field(repr=False)
    known_user: bool

    def check(self) -> bool:
        return password_matches(self.credential, self.password) and self.known_user


# Unknown users are checked against a credential that costs what a known user's costs: the
# first mechanism PLAIN tries (SHA-256) at the default iteration count, so a reply's timing
# does not tell who exists. (A user created with only SHA-512 or with more iterations is
# slower to check, and so tells that it exists; `users add` creates both at 4096.)
_NOBODY = make_credential("", secrets.token_hex(16), SCRAM_MECHANISMS[0])


class SaslSession:
    def __init__(self, enabled_mechanisms: tuple[str, ...], lookup: CredentialLookup) -> None:
        self.enabled_mechanisms = enabled_mechanisms
        self.lookup = lookup
        self.mechanism: str | None = None
        self.username: str | None = None  # set once authentication is complete
        self._scram_step = 0
        self._scram: Any = None  # scramp's ScramServer, between the two SCRAM steps
        self._pending_username: str | None = None
        #: The user name the client gave, known or not (for the failed-login limiter).
        self.claimed_username: str | None = None

    @property
    def principal(self) -> str | None:
        return None if self.username is None else f"User:{self.username}"

    def handshake(self, mechanism: str) -> ErrorCode:
        if self.mechanism is not None:
            return ErrorCode.ILLEGAL_SASL_STATE
        if mechanism not in self.enabled_mechanisms:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        return ErrorCode.NONE

    def step(self, token: bytes) -> SaslStep | PasswordCheck:
        if self.mechanism is None or self.username is not None:
            raise IllegalSaslState("SaslAuthenticate before SaslHandshake or after completion")
        if self.mechanism == "PLAIN":
            return self._plain(token)
        return self._scram_exchange(token)

    def _failed(self) -> AuthenticationFailed:
        return AuthenticationFailed(
            "Authentication failed: invalid credentials with SASL mechanism " + str(self.mechanism)
        )

    def _plain(self, token: bytes) -> PasswordCheck:
        # RFC 4616: [authzid] NUL authcid NUL passwd
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Authentication failed: malformed PLAIN token")
        try:
            authzid, username, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed("Authentication failed: malformed PLAIN token") from None
        self.claimed_username = username
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: authorization id differs from the username"
            )
        credential = None
        for mechanism in SCRAM_MECHANISMS:  # SHA-256 first: half the cost of SHA-512
            credential = credential or self.lookup(username, mechanism)
        return PasswordCheck(username, credential or _NOBODY, password, credential is not None)

    def finish_plain(self, check: PasswordCheck, matched: bool) -> SaslStep:
        if self.username is not None or self.mechanism != "PLAIN":
            raise IllegalSaslState("no PLAIN login is in progress")
        if not matched:
            raise self._failed()
        self.username = check.username
        return SaslStep(b"", complete=True)

    def _scram_exchange(self, token: bytes) -> SaslStep:
        assert self.mechanism in SCRAM_MECHANISMS
        mechanism = self.mechanism
        try:
            message = token.decode()
        except UnicodeDecodeError:
            raise self._failed() from None
        try:
            if self._scram_step == 0:
                self._scram_step = 1
                server = ScramMechanism(mechanism).make_server(self._auth_info)
                server.set_client_first(message)
                self._scram = server
                return SaslStep(server.get_server_first().encode(), complete=False)
            if self._scram_step == 1:
                self._scram_step = 2
                server = self._scram
                assert server is not None
                server.set_client_final(message)
                self.username = self._pending_username
                return SaslStep(server.get_server_final().encode(), complete=True)
        except ScramException:
            raise self._failed() from None
        raise IllegalSaslState("SCRAM exchange already finished")

    def _auth_info(self, saslname: str) -> tuple[bytes, bytes, bytes, int]:
        # RFC 5802 section 5.1: "=2C" and "=3D" stand for "," and "=" in a username.
        username = saslname.replace("=2C", ",").replace("=3D", "=")
        self.claimed_username = username
        assert self.mechanism is not None
        credential = self.lookup(username, self.mechanism)
        if credential is None:
            raise KeyError("unknown user")
        self._pending_username = username
        return (
            credential.salt,
            credential.stored_key,
            credential.server_key,
            credential.iterations,
        )


class IllegalSaslState(Exception):
    """ILLEGAL_SASL_STATE: a token arrived when none was expected."""


class FailedLoginLimiter:
    """At most ``max_failures`` failed logins per (client address, user name) per window,
    and ``ADDRESS_FACTOR`` times that per address whatever the user names.

    Past either, logins are refused without looking at the password until the oldest
    failure leaves the window. Per user, so one client retrying a wrong password does not
    lock a correct user out from the same host; per address too, so trying many user names
    from one host still gets only a few dozen guesses a minute. What remains: a client
    retrying a wrong password does lock its own user out from that address for the window,
    and guesses spread over many addresses are limited only per address.
    """

    MAX_KEYS = 10_000  # memory bound: the oldest key is forgotten past this
    ADDRESS_FACTOR = 10

    def __init__(self, max_failures: int, window_ms: int) -> None:
        self.max_failures = max_failures
        self.window_ms = window_ms
        self._failures: dict[tuple[str, str | None], deque[int]] = {}
        # Password checks in flight, by the same keys: they count as failures until they
        # end, or many parallel logins would all pass before the first failure is recorded.
        self._checking: dict[tuple[str, str | None], int] = {}

    def _limits(self, address: str, user: str) -> tuple[tuple[tuple[str, str | None], int], ...]:
        return (
            ((address, user), self.max_failures),
            ((address, None), self.max_failures * self.ADDRESS_FACTOR),
        )

    def _recent(self, key: tuple[str, str | None], now_ms: int) -> int:
        times = self._failures.get(key)
        if times is None:
            return 0
        while times and times[0] <= now_ms - self.window_ms:
            times.popleft()
        if not times:
            del self._failures[key]
        return len(times)

    def blocked(self, address: str, user: str, now_ms: int) -> bool:
        return self.blocked_by(address, user, now_ms) is not None

    def blocked_by(self, address: str, user: str, now_ms: int) -> str | None:
        """Why logins of ``user`` from ``address`` are refused unchecked now: "user" (its
        own failures from there) or "address" (failures of any names from there)."""
        for key, limit in self._limits(address, user):
            if self._recent(key, now_ms) + self._checking.get(key, 0) >= limit:
                return "user" if key[1] is not None else "address"
        return None

    def record_failure(self, address: str, user: str, now_ms: int) -> None:
        for key, limit in self._limits(address, user):
            times = self._failures.get(key)
            if times is None:
                if len(self._failures) >= self.MAX_KEYS:
                    del self._failures[next(iter(self._failures))]
                times = self._failures[key] = deque(maxlen=limit)
            times.append(now_ms)

    def check_started(self, address: str, user: str) -> None:
        """A password check (run off the loop) began."""
        for key, _limit in self._limits(address, user):
            self._checking[key] = self._checking.get(key, 0) + 1

    def check_ended(self, address: str, user: str) -> None:
        for key, _limit in self._limits(address, user):
            left = self._checking.get(key, 0) - 1
            if left > 0:
                self._checking[key] = left
            else:
                self._checking.pop(key, None)
