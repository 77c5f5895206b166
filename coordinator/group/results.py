"""Results the state machine answers requests with (error codes are Kafka's numbers)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    error_code: int
    members: list[tuple[str, str | None, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    topics: list[tuple[str, list[tuple[int, int]]]]  # (topic, [(partition, error)])


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    error_code: int
    # (topic, [(partition, offset, leader epoch, metadata, error)])
    topics: list[tuple[str, list[tuple[int, int, int, str | None, int]]]]


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class GroupStats:
    """How many groups are in each state, and their members (for gauges and consoles)."""

    groups_by_state: dict[str, int]
    members: int
