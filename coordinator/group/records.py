"""What the state machine asks its driver to persist; ``GroupCoordinator.load`` rebuilds the
groups and offsets from them (the latest record for a key wins).

Timestamps are readings of the caller's ``now_ms`` clock. For sessions and offset retention
to carry across a restart, the driver must use a clock that continues across restarts
(e.g. wall-clock anchored); ``load`` treats timestamps from the future as "now".
"""

from __future__ import annotations

from .frozen import frozen


@frozen
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
    last_heartbeat_ms: int  # the session timer's last restart


@frozen
class GroupMetadataRecord:
    """A whole group's metadata: written when a group is created, at each join completion,
    when an assignment is stored and when a static member is replaced in Stable."""

    group_id: str
    state: str  # GroupState value at the time of the snapshot
    state_timestamp_ms: int | None  # when that state was entered (Empty: offset retention)
    protocol_type: str | None
    protocol_name: str | None
    generation_id: int
    leader_id: str | None
    members: list[MemberRecord]


@frozen
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None


@frozen
class OffsetDeleteRecord:
    group_id: str
    topic: str
    partition: int


@frozen
class GroupDeletedRecord:
    """The group and all its offsets are gone."""

    group_id: str


@frozen
class HeartbeatRecord:
    """A member's last heartbeat, checkpointed between snapshots of its group: a member
    restored after a crash keeps only what was left of its session. A later snapshot of
    the group supersedes it."""

    group_id: str
    member_id: str
    last_heartbeat_ms: int


@frozen
class ConsumerGroupRecord:
    """A KIP-848 consumer group's own fields (Kafka's group epoch, target assignment epoch
    and subscription metadata records); its members are ``ConsumerMemberRecord``s and its
    offsets the classic ``OffsetCommitRecord``s."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    subscription_metadata: dict[str, int]  # topic -> partitions, as last assigned from


@frozen
class ConsumerMemberRecord:
    """A KIP-848 member as the coordinator knows it, written when it changes (Kafka's member
    subscription, target assignment and current assignment records in one)."""

    group_id: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str]
    server_assignor: str | None
    state: str  # MemberState value
    member_epoch: int
    previous_member_epoch: int
    assigned: dict[str, list[int]]
    pending_revocation: dict[str, list[int]]
    target: dict[str, list[int]]  # its part of the target assignment
    subscribed_topic_regex: str | None = None
    #: A member speaking the classic protocol inside a consumer group (migration): its
    #: session timeout and JoinGroup protocols (name, base64 metadata); None otherwise.
    classic_session_timeout_ms: int | None = None
    classic_protocols: list[list[str]] | None = None


@frozen
class ConsumerMemberRemovedRecord:
    group_id: str
    member_id: str


@frozen
class ConsumerGroupDeletedRecord:
    """The consumer group and its members are gone (deleted, expired, or turned into a
    classic group); its offsets, if any, are not touched (``GroupDeletedRecord`` removes
    those, and a consumer group of the same id with them)."""

    group_id: str


@frozen
class GroupConfigRecord:
    """A group's own configs (Kafka's dynamic group configs: consumer.session.timeout.ms,
    consumer.heartbeat.interval.ms), all of them; empty: none left (deleted)."""

    group_id: str
    configs: dict[str, int]


#: Everything the state machine persists: a closed union, so a consumer that matches on it
#: (the store, ``load``) is told by the type checker when a variant is added.
Record = (
    GroupMetadataRecord
    | OffsetCommitRecord
    | OffsetDeleteRecord
    | GroupDeletedRecord
    | HeartbeatRecord
    | ConsumerGroupRecord
    | ConsumerMemberRecord
    | ConsumerMemberRemovedRecord
    | ConsumerGroupDeletedRecord
    | GroupConfigRecord
)
