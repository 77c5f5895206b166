"""Results the state machine answers requests with (error codes are Kafka's numbers)."""

from __future__ import annotations

from dataclasses import field

from .frozen import frozen


@frozen
class MemberMetadata:
    """A member as the leader's JoinGroup response lists it."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@frozen
class MemberError:
    """One member's outcome in a batched LeaveGroup (the request's ids, echoed)."""

    member_id: str
    group_instance_id: str | None
    error_code: int


@frozen
class PartitionError:
    partition: int
    error_code: int


@frozen
class TopicErrors:
    topic: str
    partitions: list[PartitionError]


@frozen
class PartitionOffset:
    """A committed offset as OffsetFetch reports it (offset -1: none)."""

    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error_code: int = 0


@frozen
class TopicOffsets:
    topic: str
    partitions: list[PartitionOffset]


@frozen
class GroupError:
    group_id: str
    error_code: int


@frozen
class JoinGroupResult:
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: list[MemberMetadata] = field(default_factory=list)


@frozen
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@frozen
class HeartbeatResult:
    error_code: int


@frozen
class LeaveGroupResult:
    error_code: int
    members: list[MemberError] = field(default_factory=list)


@frozen
class OffsetCommitResult:
    topics: list[TopicErrors]


@frozen
class OffsetFetchResult:
    error_code: int
    topics: list[TopicOffsets]


@frozen
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@frozen
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]


@frozen
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@frozen
class GroupStats:
    """How many groups are in each state, and their members (for gauges and consoles)."""

    groups_by_state: dict[str, int]
    members: int
    #: KIP-848 consumer groups by state, their members, and the members that still have
    #: partitions to revoke.
    consumer_groups_by_state: dict[str, int] = field(default_factory=dict)
    consumer_members: int = 0
    members_revoking: int = 0


@frozen
class DeleteGroupsResult:
    groups: list[GroupError]


@frozen
class OffsetDeleteResult:
    error_code: int
    topics: list[TopicErrors] = field(default_factory=list)
