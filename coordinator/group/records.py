"""What the state machine asks its driver to persist, and how each record *replays*: into
what the store holds of its group (``StoredGroup``) and into the offsets (Kafka's
``GroupCoordinatorShard.replay``, dispatching to the group and offset managers). Loading is
replaying what the store returns, then building each group from its ``StoredGroup``
(lifecycle.py); a failed write rolls a group back to its ``StoredGroup``, kept by replaying
each record once it is stored (durability.py). Store-side, ``store/tables.py`` declares
each record's table and row.

To add a field to a record: add it here (with a default, so records stored without it
still load); a record kept as a JSON document (snapshots, consumer groups and members)
needs nothing in the store; then use it where the group is built (lifecycle.py,
consumer/durability.py).

Timestamps are readings of the caller's ``now_ms`` clock. For sessions and offset retention
to carry across a restart, the driver must use a clock that continues across restarts
(e.g. wall-clock anchored); ``load`` treats timestamps from the future as "now".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .frozen import frozen


class Offsets(Protocol):
    """Where offset records replay (offsets_manager.py)."""

    def put(self, record: OffsetCommitRecord) -> None: ...

    def delete(self, group_id: str, topic: str, partition: int) -> bool: ...

    def take(self, group_id: str) -> object: ...


@dataclass(slots=True)
class StoredGroup:
    """What the store holds of one group, as its records replay: everything but offsets
    (the offsets manager keeps those, stored and in flight)."""

    #: The classic group's last snapshot, and its members' heartbeats checkpointed since.
    snapshot: GroupMetadataRecord | None = None
    heartbeats: dict[str, int] = field(default_factory=dict)
    #: The consumer group's own record and its members (newer than a classic snapshot of
    #: the same id: a group converted from classic keeps that snapshot in the store).
    consumer: ConsumerGroupRecord | None = None
    members: dict[str, ConsumerMemberRecord] = field(default_factory=dict)
    #: Its own configs (none: empty).
    configs: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.snapshot is not None or self.consumer is not None or bool(self.configs)

    def clear(self) -> None:
        """The group is deleted (its configs are not: they outlive the group)."""
        self.snapshot = self.consumer = None
        self.heartbeats.clear()
        self.members.clear()


# Each record's ``replay(stored, offsets)``: the record is stored, so what the store holds
# of its group (and, given ``offsets``, the offsets) becomes what it holds after it.


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

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.snapshot = self
        stored.heartbeats.clear()  # it carries its members' heartbeats


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

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        if offsets is not None:
            offsets.put(self)


@frozen
class OffsetDeleteRecord:
    group_id: str
    topic: str
    partition: int

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        if offsets is not None:
            offsets.delete(self.group_id, self.topic, self.partition)


@frozen
class GroupDeletedRecord:
    """The group and all its offsets are gone."""

    group_id: str

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.clear()
        if offsets is not None:
            offsets.take(self.group_id)


@frozen
class HeartbeatRecord:
    """A member's last heartbeat, checkpointed between snapshots of its group: a member
    restored after a crash keeps only what was left of its session. A later snapshot of
    the group supersedes it."""

    group_id: str
    member_id: str
    last_heartbeat_ms: int

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        known = stored.heartbeats.get(self.member_id, 0)
        stored.heartbeats[self.member_id] = max(known, self.last_heartbeat_ms)


@frozen
class ConsumerGroupRecord:
    """A KIP-848 consumer group's own fields (Kafka's group epoch, target assignment epoch
    and subscription metadata records); its members are ``ConsumerMemberRecord``s and its
    offsets the classic ``OffsetCommitRecord``s."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    subscription_metadata: dict[str, int]  # topic -> partitions, as last assigned from

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.consumer = self


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
    #: KIP-1251: the epoch at which the member got each partition, in the order of
    #: ``assigned`` and ``pending_revocation`` (Kafka's AssignmentEpochs, a tagged field of
    #: its current-assignment record). Stored without them (before Kafka 4.3's rules were
    #: served), a member's partitions count as got at its member epoch.
    assigned_epochs: dict[str, list[int]] = field(default_factory=dict)
    pending_revocation_epochs: dict[str, list[int]] = field(default_factory=dict)

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.members[self.member_id] = self


@frozen
class ConsumerMemberRemovedRecord:
    group_id: str
    member_id: str

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.members.pop(self.member_id, None)


@frozen
class ConsumerGroupDeletedRecord:
    """The consumer group and its members are gone (deleted, expired, or turned into a
    classic group); its offsets, if any, are not touched (``GroupDeletedRecord`` removes
    those, and a consumer group of the same id with them)."""

    group_id: str

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.consumer = None
        stored.members.clear()


@frozen
class GroupConfigRecord:
    """A group's own configs (Kafka's dynamic group configs: consumer.session.timeout.ms,
    consumer.heartbeat.interval.ms), all of them; empty: none left (deleted)."""

    group_id: str
    configs: dict[str, int]

    def replay(self, stored: StoredGroup, offsets: Offsets | None) -> None:
        stored.configs = dict(self.configs)


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

#: A KIP-848 consumer group's records (consumer/durability.py writes them).
ConsumerRecord = (
    ConsumerGroupRecord
    | ConsumerMemberRecord
    | ConsumerMemberRemovedRecord
    | ConsumerGroupDeletedRecord
)
CONSUMER_RECORDS = (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    ConsumerGroupDeletedRecord,
)
