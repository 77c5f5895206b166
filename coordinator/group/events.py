"""Events for logs and the journal: every membership change and rebalance, with its reason."""

from __future__ import annotations

from enum import StrEnum

from .frozen import frozen


class RebalanceTrigger(StrEnum):
    """Why a rebalance started, in few values (a metric label); ``reason`` has the detail."""

    NEW_MEMBER = "new_member"
    MEMBER_REJOINED = "member_rejoined"  # a known member (or the leader) joined again
    STATIC_MEMBER_REPLACED = "static_member_replaced"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"  # its session ran out
    SYNC_TIMEOUT = "sync_timeout"  # members sent no SyncGroup within the rebalance timeout
    LOADED = "loaded"  # reloaded mid-rebalance (or over group.max.size) after a restart
    WRITE_FAILED = "write_failed"  # rolled back to a snapshot taken mid-rebalance


class RemovalCause(StrEnum):
    """How a member left: on its own (LeaveGroup), by a timer, or evicted."""

    LEFT = "left"  # LeaveGroup
    SESSION_TIMEOUT = "session_timeout"  # the heartbeat timer
    NEW_MEMBER_JOIN_TIMEOUT = "new_member_join_timeout"  # the heartbeat timer of a new member
    REBALANCE_TIMEOUT = "rebalance_timeout"  # the join timer: it did not rejoin
    SYNC_TIMEOUT = "sync_timeout"  # the sync timer: it sent no SyncGroup
    GROUP_MAX_SIZE = "group_max_size"  # KIP-389 eviction

    @property
    def expired(self) -> bool:
        return self not in (RemovalCause.LEFT, RemovalCause.GROUP_MAX_SIZE)


@frozen
class MemberJoined:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    protocols: list[str]


@frozen
class MemberRemoved:
    group_id: str
    member_id: str
    group_instance_id: str | None
    reason: str
    cause: RemovalCause
    client_reason: str | None = None  # LeaveGroup v5+ (KIP-800)


@frozen
class StaticMemberReplaced:
    group_id: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str


@frozen
class RebalanceStarted:
    group_id: str
    generation_id: int  # the generation being replaced
    reason: str
    trigger: RebalanceTrigger


@frozen
class JoinCompleted:
    group_id: str
    generation_id: int
    members: int
    leader: str | None
    protocol_name: str | None
    duration_ms: int  # the join phase: since the rebalance started


@frozen
class SyncCompleted:
    group_id: str
    generation_id: int
    duration_ms: int  # the sync phase: since the join phase completed
    rebalance_duration_ms: int | None  # since the rebalance started (None: not seen, e.g. reload)
    protocol_type: str | None
    # Each member's assignment as the leader sent it; readers decode it off the event loop.
    assignments: tuple[tuple[str, bytes], ...]


@frozen
class StateChanged:
    group_id: str
    old_state: str
    new_state: str


@frozen
class GroupLoaded:
    group_id: str
    state: str
    members: int
    offsets: int


@frozen
class GroupConverted:
    """The group changed protocol (KIP-848's online migration): ``classic`` to
    ``consumer`` when a consumer-protocol member joined it, back when the last one left."""

    group_id: str
    from_type: str
    to_type: str
    epoch: int  # the generation (classic) that became the group epoch, or back
    members: int
    reason: str


@frozen
class GroupReverted:
    """A write of the group failed: it is back as last stored (None: it never was)."""

    group_id: str
    generation_id: int | None
    state: str | None
    members: int


@frozen
class GroupUnloaded:
    """The group's coordinator partition moved to another node (as Kafka unloads it)."""

    group_id: str
    generation_id: int
    members: int


@frozen
class GroupDeleted:
    group_id: str
    reason: str


@frozen
class OffsetsCommitted:
    group_id: str
    count: int


@frozen
class OffsetsExpired:
    group_id: str
    count: int


@frozen
class TargetAssignmentComputed:
    """A KIP-848 consumer group's server-side assignor computed the target of an epoch."""

    group_id: str
    group_epoch: int
    assignor: str
    members: int
    members_changed: int  # members whose target differs from the previous one


@frozen
class MemberReconciled:
    """A KIP-848 member owns its target assignment at the group's assignment epoch."""

    group_id: str
    member_id: str
    member_epoch: int
    #: Since that target was computed (None: computed before this node loaded the group).
    duration_ms: int | None


@frozen
class LimitReached:
    """A configured limit refused a request (logged; counted in metrics)."""

    group_id: str | None  # None: not about one group (the topic catalog)
    limit: str  # the option's name, e.g. "group_max_size"
    value: int  # the configured limit
    error: str  # the Kafka error the client got


@frozen
class GroupConfigCapped:
    """A group's own config, stored when the daemon's bounds were wider, is applied capped
    to today's bounds (KAFKA-20162; logged as a warning when the group is loaded)."""

    group_id: str
    config: str  # e.g. "consumer.session.timeout.ms"
    stored: int  # the value as set and described
    applied: int  # the value members get
    minimum: int  # the daemon's bounds
    maximum: int


#: Everything the state machine reports: a closed union, so a consumer that matches on it
#: (the journal, metrics) is told by the type checker when a variant is added.
GroupEvent = (
    MemberJoined
    | MemberRemoved
    | StaticMemberReplaced
    | RebalanceStarted
    | JoinCompleted
    | SyncCompleted
    | StateChanged
    | GroupLoaded
    | GroupReverted
    | GroupConverted
    | GroupUnloaded
    | GroupDeleted
    | OffsetsCommitted
    | OffsetsExpired
    | TargetAssignmentComputed
    | MemberReconciled
    | LimitReached
    | GroupConfigCapped
)
