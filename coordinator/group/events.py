"""Events for logs and the journal: every membership change and rebalance, with its reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberJoined:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    protocols: list[str]


@dataclass(frozen=True, slots=True)
class MemberRemoved:
    group_id: str
    member_id: str
    group_instance_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced:
    group_id: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceStarted:
    group_id: str
    generation_id: int  # the generation being replaced
    reason: str


@dataclass(frozen=True, slots=True)
class JoinCompleted:
    group_id: str
    generation_id: int
    members: int
    leader: str | None
    protocol_name: str | None


@dataclass(frozen=True, slots=True)
class SyncCompleted:
    group_id: str
    generation_id: int


@dataclass(frozen=True, slots=True)
class StateChanged:
    group_id: str
    old_state: str
    new_state: str


@dataclass(frozen=True, slots=True)
class GroupLoaded:
    group_id: str
    state: str
    members: int
    offsets: int


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    group_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class OffsetsCommitted:
    group_id: str
    count: int


@dataclass(frozen=True, slots=True)
class OffsetsExpired:
    group_id: str
    count: int


@dataclass(frozen=True, slots=True)
class LimitReached:
    """A configured limit refused a request (logged; counted in metrics)."""

    group_id: str
    limit: str  # the option's name, e.g. "group_max_size"
    value: int  # the configured limit
    error: str  # the Kafka error the client got
