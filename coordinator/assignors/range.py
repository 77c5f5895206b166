"""``range``: per topic, contiguous partition ranges to the subscribers in Kafka's member order.

Subscribers are sorted static members first (by group instance id), then dynamic ones (by
member id); with P partitions and N subscribers the first P % N get P // N + 1 partitions.
The client one aligns racks only with partition replica racks, which
``partitions_per_topic`` does not carry, so racks play no part here.

The KIP-848 server-side ``range`` (Kafka 3.7+) is the same split made sticky: per topic, each
subscriber first keeps the lowest of its current partitions up to its quota (plus one more
while members with an extra partition are still due), and what is left over goes out in
ascending ranges, in member order, to those still short of their quota.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    member_order_key,
    subscribed_topics,
    unique,
)


def range_assign(
    members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
) -> Assignment:
    counts = subscribed_topics(members, partitions_per_topic)
    ordered = sorted(members, key=lambda m: member_order_key(m, members[m]))
    assignment: Assignment = {m: {} for m in members}
    subscribers: dict[str, list[str]] = {t: [] for t in counts}
    for member in ordered:
        for topic in unique(members[member].topics):
            if topic in subscribers:
                subscribers[topic].append(member)
    for topic, consumers in subscribers.items():
        if not consumers:
            continue
        quota, extra = divmod(counts[topic], len(consumers))
        start = 0
        for i, member in enumerate(consumers):
            length = quota + (1 if i < extra else 0)
            if length:
                assignment[member][topic] = list(range(start, start + length))
            start += length
    return {m: dict(sorted(a.items())) for m, a in assignment.items()}


class RangeAssignor:
    """Kafka's ``org.apache.kafka.clients.consumer.RangeAssignor`` (protocol name ``range``)."""

    name = "range"
    rebalance_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        return range_assign(members, partitions_per_topic)

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        return None


def sticky_range_assign(
    members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
) -> Assignment:
    """Kafka's server-side range: ``owned_partitions`` is each member's current target."""
    counts = subscribed_topics(members, partitions_per_topic)
    ordered = sorted(members, key=lambda m: member_order_key(m, members[m]))
    assignment: Assignment = {m: {} for m in members}
    for topic, count in counts.items():
        subscribers = [m for m in ordered if topic in members[m].topics]
        quota, extra = divmod(count, len(subscribers))
        taken: set[int] = set()
        short: list[tuple[str, int]] = []  # (member, partitions still missing to the quota)
        for member in subscribers:
            # Lowest first, so co-partitioned topics keep the same numbers together.
            current = sorted(
                p for p in set(members[member].owned_partitions.get(topic, ())) if p < count
            )
            keep = current[:quota]
            if len(current) > quota and extra > 0:
                extra -= 1
                keep = current[: quota + 1]
            else:
                short.append((member, quota - len(current)))
            keep = [p for p in keep if p not in taken]  # owners should be disjoint; be safe
            taken.update(keep)
            if keep:
                assignment[member][topic] = keep
        free = iter([p for p in range(count) if p not in taken])
        for member, missing in short:
            if extra > 0:
                missing += 1
                extra -= 1
            more = [p for _, p in zip(range(max(missing, 0)), free, strict=False)]
            if more:
                assignment[member][topic] = sorted(assignment[member].get(topic, []) + more)
    # Duplicated owners (never in a consistent group) would leave partitions behind.
    left = {(t, p) for t, n in counts.items() for p in range(n)} - {
        (t, p) for a in assignment.values() for t, ps in a.items() for p in ps
    }
    if left:
        return range_assign(members, partitions_per_topic)
    return {m: dict(sorted(a.items())) for m, a in assignment.items()}


class ServerRangeAssignor(RangeAssignor):
    """Kafka's KIP-848 server-side ``RangeAssignor`` (group.consumer.assignors ``range``):
    the client split, made sticky to the current target assignment (``owned_partitions``)."""

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        return sticky_range_assign(members, partitions_per_topic)
