"""A sans-IO driver for the request pipeline: the daemon's node, dispatcher and connection
protocol with a manual clock, no event loop and no sockets.

The state machine's effects are carried out by the daemon's own driver
(``coordinator/shell/driver.py``) with a table of timers and a store that is durable at once.
Threads run in line and nothing waits: a ``Delayed`` reply is reported with its delay, so a
test checks the delay instead of sleeping it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.effects import Effects
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.handlers.node import Node
from coordinator.handlers.outcome import Awaiting, Delayed, Offloaded, Outcome, Pending
from coordinator.handlers.routes import daemon_dispatcher
from coordinator.security.config import Listener
from coordinator.settings.config import Settings
from coordinator.shared.clock import ManualClock
from coordinator.shell.connection import ConnectionProtocol
from coordinator.shell.driver import Batch, EffectsDriver
from protocol.frames import Request, encode_request
from protocol.schema import Struct


@dataclass
class Answer:
    """What the client would get: ``body`` (None: still waiting), after ``delay_ms``."""

    body: Any
    delay_ms: int = 0
    outcome: Outcome[Any] | None = None

    def later(self) -> Any:
        """The body of a parked reply once the state machine has answered it, else None."""
        assert self.outcome is not None and isinstance(self.outcome.reply, Awaiting)
        token = self.outcome.reply.token
        return self.outcome.reply.render(token.result) if token.answered else None


@dataclass
class Pipeline:
    settings: Settings = field(default_factory=Settings)
    clock: ManualClock = field(default_factory=ManualClock)
    #: Makes member ids (None: random ones, as the daemon's): twins given the same
    #: deterministic one name their members alike.
    new_member_id: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        if self.new_member_id is None:
            self.node = Node(self.settings, self.clock)
        else:
            coordinator = partial(GroupCoordinator, new_member_id=self.new_member_id)
            self.node = Node(self.settings, self.clock, coordinator)
        self.dispatcher = daemon_dispatcher(self.node)
        self.timers = TimerTable()
        self.events: list[object] = []
        self.written_topics: list[tuple[str, int]] = []
        self.records: list[object] = []
        self.driver: EffectsDriver[Pending, None] = EffectsDriver(
            self.node.groups,
            timers=self.timers,
            write=self._write,
            emit=self.events.append,
            answer=Pending.resolve,
            fail=Pending.fail,
            now_ms=self.clock.now_ms,
        )

    def connect(self, listener: Listener | None = None) -> ConnectionProtocol:
        conn = ConnectionContext(client_host="/127.0.0.1", listener=listener)
        if listener is not None:
            conn.authenticated = not listener.protocol.uses_sasl
        return ConnectionProtocol(conn, self.dispatcher.supports)

    def frame(self, body: Struct, version: int, correlation_id: int = 1) -> bytes:
        return encode_request(body, version, correlation_id, "pipeline-test")[4:]

    def send(self, connection: ConnectionProtocol, body: Struct, version: int) -> Answer | str:
        """The answer to ``body``; a string when the connection refuses it (and closes)."""
        action = connection.receive(self.frame(body, version))
        if not isinstance(action, Request):
            return getattr(action, "reason", repr(action))
        return self.carry_out(self.dispatcher.dispatch(action, connection.conn))

    def carry_out(self, outcome: Outcome[Any]) -> Answer:
        if outcome.effects is not None or outcome.topics:
            self.driver.apply(outcome.effects, outcome.topics)
        reply = outcome.reply
        if isinstance(reply, Awaiting):
            if reply.token.answered:
                return Answer(reply.render(reply.token.result), outcome=outcome)
            return Answer(None, outcome=outcome)
        if isinstance(reply, Delayed):
            return Answer(reply.body, reply.delay_ms, outcome)
        if isinstance(reply, Offloaded):
            return self.carry_out(reply.then(reply.work()))
        return Answer(reply, outcome=outcome)

    def apply(self, effects: Effects[Pending]) -> None:
        self.driver.apply(effects)

    def _write(self, batch: Batch[Pending]) -> None:
        """Stored at once."""
        self.records += batch.records
        self.written_topics += batch.topics
        self.driver.written(batch, None)

    def advance(self, ms: int) -> None:
        """Move the clock, firing the timers that fall due, in deadline order."""
        until = self.clock.now_ms() + ms
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= until)
            if not due:
                break
            deadline, key = due[0]
            del self.timers[key]
            self.clock.advance(max(0, deadline - self.clock.now_ms()))
            self.driver.fire_timer(key)
        self.clock.advance(until - self.clock.now_ms())


class TimerTable(dict[str, int]):
    """The armed timers: key -> deadline (ms)."""

    def schedule(self, key: str, deadline_ms: int) -> None:
        self[key] = deadline_ms

    def cancel(self, key: str) -> None:
        self.pop(key, None)
