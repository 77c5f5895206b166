"""``range``: per topic, contiguous partition ranges to the subscribers in Kafka's member order.

Subscribers are sorted static members first (by group instance id), then dynamic ones (by
member id); with P partitions and N subscribers the first P % N get P // N + 1 partitions.
Kafka's client RangeAssignor and the KIP-848 server-side RangeAssignor produce the same
ranges when racks play no part, so both are this function. (The client one aligns racks only
with partition replica racks, which ``partitions_per_topic`` does not carry.)
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


class ServerRangeAssignor(RangeAssignor):
    """Kafka's KIP-848 server-side ``RangeAssignor`` (group.consumer.assignors ``range``).

    Stateless like Kafka's: the current target assignment (``owned_partitions``) is ignored.
    """
