"""``FailedLoginThrottle``: what slows password guessing on the Kafka listeners, without I/O.

Kafka answers a failed login late (``connection.failed.authentication.delay.ms``) and then
closes the connection; it never locks a user out. So here: every failed login is answered
after that delay. On its own the delay would not hold against a guesser opening thousands
of connections at once, so beyond Kafka, past ``allowance`` failures a window for one user
from one address (``ADDRESS_FACTOR`` times that for an address, whatever the user names):

- each further failure of that user from there is answered twice as late as the one
  before, up to ``MAX_DELAY_MS``: the throttle;
- while a failure's answer is held, or a password check runs, no other login of that user
  from there is checked: it is refused unchecked at once (and not counted). A client sends
  its next try after the answer, so it is always checked: guessing is spread over time,
  and the right password gets in as soon as it is sent (nothing to wait out).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

Key = tuple[str, str | None]  # (client address, user name); None: any user from there


@dataclass(slots=True)
class _State:
    failures: deque[int] = field(default_factory=deque)
    in_flight: list[int] = field(default_factory=list)  # when each running check began
    held_until: int = 0  # ms: a failure's answer (or an over-allowance check) is pending


@dataclass(frozen=True, slots=True)
class Admission:
    """A password check let through (``FailedLoginThrottle.admit``)."""

    address: str
    user: str
    over: tuple[Key, ...]  # the keys it was past the allowance of
    started_ms: int


class FailedLoginThrottle:
    MAX_KEYS = 10_000  # memory bound: the oldest key is forgotten past this
    ADDRESS_FACTOR = 10
    MAX_DELAY_MS = 10_000
    #: A check never finished (its connection closed while the key derivation ran) stops
    #: counting after this long: a lost answer must not hold a user's logins for ever.
    STALE_CHECK_MS = 30_000

    def __init__(self, allowance: int, window_ms: int, base_delay_ms: int) -> None:
        self.allowance = allowance
        self.window_ms = window_ms
        self.base_delay_ms = base_delay_ms
        self._keys: dict[Key, _State] = {}

    def _limits(self, address: str, user: str) -> tuple[tuple[Key, int], ...]:
        return (
            ((address, user), self.allowance),
            ((address, None), self.allowance * self.ADDRESS_FACTOR),
        )

    def _state(self, key: Key) -> _State:
        state = self._keys.get(key)
        if state is None:
            if len(self._keys) >= self.MAX_KEYS:
                self._forget_one()
            state = self._keys[key] = _State()
        return state

    def _forget_one(self) -> None:
        for key, state in self._keys.items():
            if not state.in_flight:
                del self._keys[key]
                return

    def _running(self, state: _State, now_ms: int) -> int:
        state.in_flight = [t for t in state.in_flight if t > now_ms - self.STALE_CHECK_MS]
        return len(state.in_flight)

    def _recent(self, state: _State, now_ms: int) -> int:
        while state.failures and state.failures[0] <= now_ms - self.window_ms:
            state.failures.popleft()
        return len(state.failures)

    def admit(self, address: str, user: str, now_ms: int) -> Admission | None:
        """A password check may run now (then ``finish`` it), or None: refuse unchecked
        (another login of this user, or from this address, is past the allowance and
        still being checked or answered)."""
        limits = self._limits(address, user)
        over: list[Key] = []
        for key, limit in limits:
            state = self._keys.get(key)
            if state is None or self._recent(state, now_ms) + self._running(state, now_ms) < limit:
                continue
            if state.held_until > now_ms:
                return None
            over.append(key)
        for key, _limit in limits:
            state = self._state(key)
            state.in_flight.append(now_ms)
            if key in over:  # held while it runs, then for its answer's delay
                state.held_until = now_ms + self.STALE_CHECK_MS
        return Admission(address, user, tuple(over), now_ms)

    def finish(self, admission: Admission, succeeded: bool, now_ms: int) -> int:
        """Ends a check; returns how long its answer waits (ms): 0 for a success, at
        least ``base_delay_ms`` for a failure, more past the allowance."""
        delay = 0 if succeeded else self.base_delay_ms
        holds: list[tuple[_State, int]] = []
        for key, limit in self._limits(admission.address, admission.user):
            state = self._state(key)
            if admission.started_ms in state.in_flight:
                state.in_flight.remove(admission.started_ms)
            if key in admission.over:
                state.held_until = 0
            if succeeded:
                continue
            state.failures.append(now_ms)
            excess = self._recent(state, now_ms) - limit
            if excess >= 0:
                key_delay = min(self.base_delay_ms << min(excess, 30), self.MAX_DELAY_MS)
                delay = max(delay, key_delay)
                # An address's hold is shorter: its users share it.
                factor = self.ADDRESS_FACTOR if key[1] is None else 1
                holds.append((state, key_delay // factor))
        for state, hold in holds:
            state.held_until = now_ms + hold
        return delay
