"""Moving a member towards its target assignment (Kafka's CurrentAssignmentBuilder).

A member never gets a partition another member still holds: it first revokes what it must
give up (staying in its epoch, state UNREVOKED_PARTITIONS), and a partition it is due
becomes its own only once the previous owner has reported it revoked (until then the member
is UNRELEASED_PARTITIONS). A member's epoch reaches the target epoch once it holds nothing
it must give up.
"""

from __future__ import annotations

from collections.abc import Callable

from ..frozen import frozen
from .member import ConsumerMember, MemberState, Partitions


@frozen
class Step:
    """Where the member goes next."""

    state: MemberState
    member_epoch: int
    assigned: Partitions
    pending_revocation: Partitions


def _still_holds(owned: Partitions | None, revoking: Partitions) -> bool:
    """Whether the member (by its last report) still owns a partition it must revoke; a
    heartbeat without TopicPartitions reports nothing, so it counts as still holding."""
    if owned is None:
        return True
    return any(parts & revoking.get(topic, frozenset()) for topic, parts in owned.items())


def next_step(
    m: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    partition_epoch: Callable[[str, int], int],
) -> Step | None:
    """The member's next state, or None when it stays as it is."""
    match m.state:
        case MemberState.STABLE:
            if m.member_epoch == target_epoch:
                return None
            return _compute(m, m.member_epoch, target_epoch, target, owned, partition_epoch)
        case MemberState.UNREVOKED_PARTITIONS:
            if _still_holds(owned, m.pending_revocation):
                return None
            # Revoked: towards the latest target. Still revoking (the target moved on while
            # it revoked), it keeps its epoch (KAFKA-19974, Kafka 4.2): a partition is never
            # held by two members at one epoch; otherwise it reaches the target's epoch.
            return _compute(m, m.member_epoch, target_epoch, target, owned, partition_epoch)
        case MemberState.UNRELEASED_PARTITIONS:
            return _compute(m, m.member_epoch, target_epoch, target, owned, partition_epoch)


def _compute(
    m: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    partition_epoch: Callable[[str, int], int],
) -> Step:
    assigned: Partitions = {}
    revoking: Partitions = {}
    incoming: Partitions = {}
    unreleased = False
    for topic in target.keys() | m.assigned.keys():
        wanted = target.get(topic, frozenset())
        current = m.assigned.get(topic, frozenset())
        keep = current & wanted
        give_up = current - keep
        # Partitions still held by someone (assigned to or being revoked by them) wait.
        free = frozenset(p for p in wanted - keep if partition_epoch(topic, p) == -1)
        unreleased = unreleased or len(free) < len(wanted - keep)
        if keep:
            assigned[topic] = keep
        if give_up:
            revoking[topic] = give_up
        if free:
            incoming[topic] = free
    if revoking and _still_holds(owned, revoking):
        return Step(MemberState.UNREVOKED_PARTITIONS, epoch, assigned, revoking)
    for topic, parts in incoming.items():
        assigned[topic] = assigned.get(topic, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Step(state, target_epoch, assigned, {})
