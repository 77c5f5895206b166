"""The state kept between calls (``Shard``) and what one call works with (``Context``).

Every request or timer handler receives a ``Context``: the shard, the caller's clock
reading and the ``Effects`` being built, with helpers for what every handler does: reply
(at once, or once stored), emit events, arm and cancel the classic group's timers, write
a classic group's snapshot and note records in flight (each group's ``ledger``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.errors import ErrorCode

from . import events
from .classic.group import ClassicGroup
from .classic.member import Member
from .classic.states import GroupState
from .config import GroupConfig
from .consumer.group import ConsumerGroup
from .deadlines import Armed, Deadlines, TimerKind, join_key, sync_key
from .effects import Effects
from .events import GroupEvent
from .ledger import Ledger
from .model import Group
from .offsets_manager import OffsetsManager
from .records import GroupMetadataRecord, MemberRecord, Record


def no_topics(name: str) -> int:
    """A topic lookup that knows no topics (a coordinator without a catalog)."""
    return 0


def no_topic_names() -> list[str]:
    return []


def default_member_id(prefix: str) -> str:
    """Kafka's format: the client id (dynamic) or instance id (static), a dash, a random
    (version 4) UUID; made here from 16 random bytes, at less than half the cost of
    ``str(uuid.uuid4())`` (one per joining member)."""
    raw = bytearray(_random_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _RandomPool:
    """The operating system's random bytes (as ``os.urandom``), fetched 4 KiB at a time:
    one system call per 256 member ids instead of one each (a 5,000-member join made
    5,000 ``getrandom`` calls, ~25 ms of the daemon's time)."""

    __slots__ = ("_at", "_buf")

    SIZE = 4096

    def __init__(self) -> None:
        self._buf = b""
        self._at = 0

    def forget(self) -> None:
        self._buf, self._at = b"", 0

    def __call__(self, n: int) -> bytes:
        at = self._at
        if at + n > len(self._buf):
            self._buf, at = os.urandom(max(self.SIZE, n)), 0
        self._at = at + n
        return self._buf[at : at + n]


_random_bytes = _RandomPool()
# A forked child must not hand out the ids its parent will.
os.register_at_fork(after_in_child=_random_bytes.forget)


class Migration(Protocol):
    """Converting a group between the protocols (migration.py). The facade gives it to the
    shard, so that the consumer group's modules, which migration builds on, do not import
    it back."""

    def upgrade_refusal(self, ctx: Context, g: ClassicGroup) -> str | None: ...

    def to_consumer(self, ctx: Context, g: ClassicGroup) -> ConsumerGroup: ...

    def downgrade_allowed(self, ctx: Context, g: ConsumerGroup) -> bool: ...

    def to_classic(self, ctx: Context, g: ConsumerGroup, reason: str) -> ClassicGroup: ...


@dataclass(slots=True)
class Shard:
    """Everything the coordinator keeps between calls (Kafka's coordinator shard)."""

    config: GroupConfig
    new_member_id: Callable[[str], str] = default_member_id
    #: Every group, of either kind, by the Group interface (model.py): one namespace of
    #: ids, one group limit. Code that needs one kind's own state narrows by isinstance.
    groups: dict[str, Group] = field(default_factory=dict)
    #: Every group's committed offsets, whatever its kind.
    offsets: OffsetsManager = field(default_factory=OffsetsManager)
    deadlines: Deadlines = field(default_factory=Deadlines)
    #: Each group's durability (ledger.py): what the store holds of it, its records in
    #: flight and the answers waiting for them. Only groups with any of that have one.
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    #: Groups' own configs (consumer/group_configs.py), by group id.
    group_configs: dict[str, dict[str, int]] = field(default_factory=dict)
    #: A topic's partition count (0: no such topic), for consumer groups' assignments.
    topic_partitions: Callable[[str], int] = no_topics
    #: Every topic's name, for regex subscriptions; and how many there are (cheap).
    topic_names: Callable[[], list[str]] = no_topic_names
    topic_count: Callable[[], int] = lambda: 0
    #: Set by the facade (coordinator.py).
    migration: Migration | None = None


class Context:
    __slots__ = ("after_call", "config", "deadlines", "groups", "now", "out", "shard")

    def __init__(self, shard: Shard, now_ms: int) -> None:
        self.shard = shard
        self.config = shard.config
        self.groups = shard.groups
        self.deadlines = shard.deadlines
        self.now = now_ms
        self.out: Effects[Any] = Effects()
        #: Replies to give when the call ends, once it is known what they wait for (made on
        #: first use: most calls, heartbeats above all, have none).
        self.after_call: list[tuple[str, object, Any]] | None = None

    def classic(self, group_id: str) -> ClassicGroup | None:
        """The classic group of that id, or None (none, or a consumer group)."""
        g = self.groups.get(group_id)
        return g if isinstance(g, ClassicGroup) else None

    def consumer(self, group_id: str) -> ConsumerGroup | None:
        g = self.groups.get(group_id)
        return g if isinstance(g, ConsumerGroup) else None

    def at_group_limit(self, group_id: str) -> bool:
        """No room for another group (``group.max.groups``, every kind counted alike):
        reported as a limit reached."""
        limit = self.config.max_groups
        if len(self.groups) < limit:
            return False
        self.limit_reached(group_id, "max_groups", limit, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return True

    def reply(self, token: object, result: object) -> None:
        self.out.replies.append((token, result))

    def reply_when_stored(self, group_id: str, token: object, result: Any) -> None:
        """An answer showing the group's generation, leader, epochs or assignment: given
        once every record of the group so far (this call's too) is stored (durability.py)."""
        if self.after_call is None:
            self.after_call = []
        self.after_call.append((group_id, token, result))

    def ledger(self, group_id: str) -> Ledger:
        """The group's ledger (ledger.py), made on first use."""
        ledger = self.shard.ledgers.get(group_id)
        if ledger is None:
            ledger = self.shard.ledgers[group_id] = Ledger()
        return ledger

    def in_flight(self, record: Record) -> None:
        """A record whose group's answers wait for it: held until it is stored."""
        self.ledger(record.group_id).in_flight.append(record)

    def event(self, event: GroupEvent) -> None:
        self.out.events.append(event)

    def limit_reached(self, group_id: str, limit: str, value: int, error: int) -> None:
        self.out.events.append(events.LimitReached(group_id, limit, value, ErrorCode(error).name))

    def elapsed_ms(self, since_ms: int | None) -> int:
        """Time since a clock reading (0 if unknown); for durations in events."""
        return 0 if since_ms is None else max(self.now - since_ms, 0)

    def transition(self, g: ClassicGroup, target: GroupState) -> None:
        old = g.transition(target, self.now)
        self.out.events.append(events.StateChanged(g.group_id, old.value, target.value))

    # -- timers ------------------------------------------------------------------------------

    def restart_session(self, g: ClassicGroup, m: Member, timeout_ms: int | None = None) -> None:
        """(Re)arm the member's session timer: its session timeout unless told otherwise."""
        m.last_heartbeat_ms = self.now
        timeout = m.session_timeout_ms if timeout_ms is None else timeout_ms
        self.deadlines.schedule_heartbeat(
            self.out, m.heartbeat_key, g.group_id, m.member_id, self.now + timeout
        )

    def cancel(self, key: str) -> None:
        self.deadlines.cancel(self.out, key)

    def arm_join_timer(self, g: ClassicGroup, delay_ms: int) -> None:
        armed = Armed(TimerKind.JOIN, self.now + delay_ms, g.group_id)
        self.deadlines.schedule(self.out, join_key(g.group_id), armed)

    def arm_sync_timer(self, g: ClassicGroup, delay_ms: int) -> None:
        armed = Armed(TimerKind.SYNC, self.now + delay_ms, g.group_id, "", g.generation_id)
        self.deadlines.schedule(self.out, sync_key(g.group_id), armed)

    # -- persistence ------------------------------------------------------------------------

    def persist(self, g: ClassicGroup) -> None:
        """Snapshot the group's metadata (spec 4.12: what a reload rebuilds from). It is in
        flight until the driver reports it written (durability.py)."""
        record = snapshot(g)
        self.out.records.append(record)
        self.in_flight(record)


def snapshot(g: ClassicGroup) -> GroupMetadataRecord:
    """The group's metadata as memory holds it now (what ``Context.persist`` writes)."""
    return GroupMetadataRecord(
        group_id=g.group_id,
        state=g.state.value,
        state_timestamp_ms=g.state_timestamp_ms,
        protocol_type=g.protocol_type,
        protocol_name=g.protocol_name,
        generation_id=g.generation_id,
        leader_id=g.leader_id,
        members=[
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                protocol_type=m.protocol_type,
                protocols=list(m.protocols),
                assignment=m.assignment,
                last_heartbeat_ms=m.last_heartbeat_ms,
            )
            for m in g.members.values()
        ],
    )
