"""Sticky assignment when every member subscribes to the same topics (Kafka's
ConstrainedAssignmentBuilder).

With T partitions and N members every member gets ``min_quota = T // N`` or ``max_quota``
(one more), and exactly ``T % N`` members get ``max_quota``:

1. Each member keeps its owned partitions, lowest partition numbers first, up to its quota
   (``max_quota`` while members over the minimum are still needed, else ``min_quota``);
   the rest are revoked.
2. Unassigned partitions, in (topic, partition) order, are dealt round-robin to members
   below ``min_quota`` (sorted by member id), then one each to members at ``min_quota``.

Partitions that were revoked or doubly claimed and land on a new member are "transferring
ownership": the cooperative assignor withholds them for one round.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import AssignorError, TopicPartition, tp_key
from .java_order import java_key
from .sticky_ownership import Ownership


def constrained_assign(
    ownership: Ownership, topics: Mapping[str, int]
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """(assignment, partitions transferring ownership -> their new owner)."""
    total = sum(topics.values())
    members = len(ownership.owned)
    min_quota, extra = divmod(total, members)
    max_quota = min_quota + (1 if extra else 0)
    over_min = 0  # members given more than min_quota so far

    assignment: dict[str, list[TopicPartition]] = {m: [] for m in ownership.owned}
    revoked: set[TopicPartition] = set()
    under_min: list[str] = []  # unfilledMembersWithUnderMinQuotaPartitions
    at_min: list[str] = []  # unfilledMembersWithExactlyMinQuotaPartitions

    for member, claims in ownership.owned.items():
        owned = sorted(claims, key=lambda tp: (tp[1], java_key(tp[0])))
        owned = [tp for tp in owned if tp not in ownership.doubly_claimed]
        if len(owned) < min_quota:
            assignment[member].extend(owned)
            under_min.append(member)
        elif len(owned) >= max_quota and over_min < extra:
            over_min += 1
            if over_min == extra:
                at_min.clear()
            assignment[member].extend(owned[:max_quota])
            revoked.update(owned[max_quota:])
        else:
            assignment[member].extend(owned[:min_quota])
            revoked.update(owned[min_quota:])
            if over_min < extra:
                at_min.append(member)

    kept = {tp for parts in assignment.values() for tp in parts}
    unassigned = [
        (topic, p)
        for topic in sorted(topics, key=java_key)
        for p in range(topics[topic])
        if (topic, p) not in kept
    ]
    under_min.sort(key=java_key)
    at_min.sort(key=java_key)
    transferring: dict[TopicPartition, str] = {}

    cursor = 0  # the position of Kafka's iterator over under_min
    for tp in unassigned:
        if cursor < len(under_min):
            member = under_min[cursor]
            cursor += 1
        elif not under_min and not at_min:
            raise AssignorError("no more unfilled consumers to be assigned")
        elif not under_min:
            member = at_min.pop(0)
        else:
            member = under_min[0]
            cursor = 1
        assignment[member].append(tp)
        if tp in revoked or tp in ownership.doubly_claimed:
            transferring[tp] = member
        count = len(assignment[member])
        if count == min_quota:
            cursor -= 1
            del under_min[cursor]
            at_min.append(member)
        elif count == max_quota:
            over_min += 1

    if under_min and (over_min != extra or any(len(assignment[m]) != min_quota for m in under_min)):
        raise AssignorError(f"members left below the minimum quota: {sorted(under_min)}")
    for parts in assignment.values():
        parts.sort(key=tp_key)
    return assignment, transferring
