"""What the state machine asks to persist; ``GroupCoordinator.load`` rebuilds from these."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes
    last_heartbeat_wall_ms: int


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """A whole group's metadata after a rebalance step or membership change."""

    group_id: str
    state: str
    protocol_type: str | None
    protocol_name: str | None
    generation_id: int
    leader_id: str | None
    empty_since_wall_ms: int | None
    members: list[MemberRecord]


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class OffsetDeleteRecord:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupDeletedRecord:
    group_id: str
