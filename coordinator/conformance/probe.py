"""What a scenario works with: the target's settings, connections, and checks that record
the request, the expected and the actual answer when they disagree."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from protocol.apis import BY_KEY
from protocol.errors import ErrorCode
from protocol.schema import Struct

from ..client.connection import KafkaConnectionClient, connect
from ..client.pool import NAMES_TOPICS_UNTIL

T = TypeVar("T")

#: The topic scenarios subscribe to and commit offsets for.
TOPIC = "conformance"


@dataclass(frozen=True, slots=True)
class Target:
    """Where the broker is and the settings the suite cannot discover over the wire."""

    host: str
    port: int
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    max_group_size: int | None = None  # group.max.size; None: its scenario is skipped
    session_timeout_ms: int = 10000  # what members send when expiry is not being tested
    topic: str = TOPIC
    topic_partitions: int = 4
    slack_ms: int = 2000  # added to every wait for the broker's timers
    reply_timeout_ms: int = 10000  # how long a reply that is due may take

    @property
    def reply_s(self) -> float:
        return self.reply_timeout_ms / 1000

    @property
    def join_wait_s(self) -> float:
        """How long a first JoinGroup may park (initial delay plus slack)."""
        return (self.initial_rebalance_delay_ms + self.slack_ms) / 1000


class Failure(AssertionError):
    """A scenario failed; carries what was sent, what was expected and what came back."""

    def __init__(self, what: str, request: str = "", expected: str = "", actual: str = ""):
        super().__init__(what)
        self.what = what
        self.request = request
        self.expected = expected
        self.actual = actual


class Skipped(Exception):
    """The target does not advertise what the scenario needs."""


class Stalled(Exception):
    """A timing precondition did not hold: the host or the target stood still long enough
    that what happened may have been right (a session that really ran out). The runner
    runs such a scenario again with fresh groups."""


def error_name(code: int | None) -> str:
    if code is None:
        return "None"
    try:
        return f"{ErrorCode(code).name}({code})"
    except ValueError:
        return str(code)


def describe(body: Struct | None, version: int | None = None) -> str:
    if body is None:
        return "-"
    name = type(body).__name__
    text = repr(body)
    if len(text) > 600:
        text = text[:600] + "..."
    return f"{name} v{version}: {text}" if version is not None else text


_unique = itertools.count(1)


@dataclass
class Probe:
    """One scenario's view of the target. Closes what it opened when the scenario ends."""

    target: Target
    versions: dict[int, tuple[int, int]]  # advertised api key -> (min, max)
    scenario: str
    _connections: list[KafkaConnectionClient] = field(default_factory=list)
    _run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    #: Every group id handed out, for the runner to delete afterwards (shared by a run).
    groups_used: list[str] = field(default_factory=list)

    # -- naming ----------------------------------------------------------------------------

    def group_id(self, label: str = "g") -> str:
        """A group id no other scenario or run uses."""
        group = f"conformance-{self.scenario}-{label}-{self._run_id}-{next(_unique)}"
        self.groups_used.append(group)
        return group

    def instance_id(self, label: str = "i") -> str:
        return f"instance-{label}-{self._run_id}-{next(_unique)}"

    # -- versions --------------------------------------------------------------------------

    def version(self, api_key: int, wanted: int | None = None, at_least: int = 0) -> int:
        """``wanted`` if the target serves it, else the highest version both sides know.
        Raises Skipped when the API (or a version >= ``at_least``) is not advertised."""
        api = BY_KEY[api_key]
        advertised = self.versions.get(api_key)
        if advertised is None:
            raise Skipped(f"{api.name} is not advertised")
        low, high = advertised
        # The scenarios name topics: versions that take topic ids only are not theirs.
        high = min(high, api.max_version, NAMES_TOPICS_UNTIL.get(api_key, api.max_version))
        if wanted is not None:
            if not low <= wanted <= high:
                raise Skipped(f"{api.name} v{wanted} is not advertised ({low}-{advertised[1]})")
            return wanted
        if high < max(low, at_least):
            raise Skipped(f"{api.name} v{at_least}+ is not advertised ({low}-{advertised[1]})")
        return high

    # -- I/O -------------------------------------------------------------------------------

    async def connect(
        self, client_id: str = "conformance", address: tuple[str, int] | None = None
    ) -> KafkaConnectionClient:
        """A connection to the target, or to another broker at ``address``."""
        host, port = address or (self.target.host, self.target.port)
        conn = await asyncio.wait_for(connect(host, port, client_id), timeout=5)
        self._connections.append(conn)
        return conn

    async def within(self, awaitable: Awaitable[T], seconds: float, what: str) -> T:
        try:
            return await asyncio.wait_for(awaitable, seconds)
        except TimeoutError:
            raise Failure(f"{what}: no response within {seconds:.1f}s") from None

    def close(self) -> None:
        for conn in self._connections:
            conn.close()
        self._connections.clear()

    # -- checks ----------------------------------------------------------------------------

    def check(self, what: str, expected: Any, actual: Any, request: str = "") -> None:
        if expected != actual:
            raise Failure(what, request, repr(expected), repr(actual))

    def check_error(
        self, what: str, expected: int, actual: int, request: Struct | None = None, version: int = 0
    ) -> None:
        if expected != actual:
            raise Failure(
                what, describe(request, version), error_name(expected), error_name(actual)
            )

    def fail(self, what: str, request: str = "", expected: str = "", actual: str = "") -> None:
        raise Failure(what, request, expected, actual)
