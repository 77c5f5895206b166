"""A member of a consumer group (KIP-848) and its reconciliation state."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..frozen import frozen

#: Partitions by topic name.
Partitions = dict[str, frozenset[int]]

#: MemberEpoch -1 leaves the group; -2 is a static member leaving for a while.
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2


class MemberState(Enum):
    """Kafka's MemberState: where the member is in reaching its target assignment."""

    STABLE = "stable"  # owns its current assignment; waits for a newer target
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must revoke partitions before it moves on
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for others to release partitions


@frozen
class ClassicMetadata:
    """What a member that speaks the classic protocol inside a consumer group sent with
    its JoinGroup (Kafka's ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0] if self.protocols else ""


@dataclass(slots=True, eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    #: What the member owns (as far as the coordinator lets it) and what it must give back.
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    #: Set for a member using the classic protocol (JoinGroup, SyncGroup, Heartbeat).
    classic: ClassicMetadata | None = None
    #: KIP-1251: the member epoch at which it got each partition it holds (assigned or
    #: being revoked); one it has no entry for counts as got at its current epoch.
    assignment_epochs: dict[str, dict[int, int]] = field(default_factory=dict)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def assignment_epoch(self, topic: str, partition: int) -> int | None:
        """The epoch at which the member got ``partition``, or None if it does not hold it."""
        if partition not in self.assigned.get(topic, ()) and partition not in (
            self.pending_revocation.get(topic, ())
        ):
            return None
        return self.assignment_epochs.get(topic, {}).get(partition, self.member_epoch)

    def set_assignment(self, assigned: Partitions, pending: Partitions, epoch: int) -> None:
        """Hold ``assigned`` and revoke ``pending``: a partition it held keeps the epoch it
        got it at, one it did not hold is got at ``epoch`` (KIP-1251). Called before the
        member's epoch moves on."""
        epochs: dict[str, dict[int, int]] = {}
        for source in (assigned, pending):
            for topic, parts in source.items():
                for p in parts:
                    got = self.assignment_epoch(topic, p)
                    epochs.setdefault(topic, {})[p] = epoch if got is None else got
        self.assigned, self.pending_revocation = assigned, pending
        self.assignment_epochs = epochs

    def owned_partitions(self) -> list[tuple[str, int]]:
        """Partitions the coordinator counts as this member's: assigned or being revoked."""
        return [
            (topic, p)
            for source in (self.assigned, self.pending_revocation)
            for topic, parts in source.items()
            for p in parts
        ]
