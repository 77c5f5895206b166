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
    """At most ``max_failures`` failed logins per client address per window.

    Past that, logins from the address are refused without looking at the credentials
    until the oldest failure leaves the window: password guessing gets a handful of tries a
    minute, however many connections it opens.
    """

    MAX_ADDRESSES = 10_000  # memory bound: the oldest address is forgotten past this

    def __init__(self, max_failures: int, window_ms: int) -> None:
        self.max_failures = max_failures
        self.window_ms = window_ms
        self._failures: dict[str, deque[int]] = {}
        self._checking: dict[str, int] = {}  # password checks in flight, by address

    def _recent(self, address: str, now_ms: int) -> deque[int] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now_ms - self.window_ms:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times

    def blocked(self, address: str, now_ms: int) -> bool:
        times = self._recent(address, now_ms)
        failures = len(times) if times is not None else 0
        # Password checks still running count as failures until they end: otherwise many
        # parallel logins all pass this check before the first failure is recorded.
        return failures + self._checking.get(address, 0) >= self.max_failures

    def check_started(self, address: str) -> None:
        """A password check (run off the loop) began for ``address``."""
        self._checking[address] = self._checking.get(address, 0) + 1

    def check_ended(self, address: str) -> None:
        left = self._checking.get(address, 0) - 1
        if left > 0:
            self._checking[address] = left
        else:
            self._checking.pop(address, None)

    def record_failure(self, address: str, now_ms: int) -> None:
        times = self._recent(address, now_ms)
        if times is None:
            if len(self._failures) >= self.MAX_ADDRESSES:
                del self._failures[next(iter(self._failures))]
            times = self._failures[address] = deque(maxlen=self.max_failures)
        times.append(now_ms)
