"""``roundrobin``: all partitions in (topic, partition) order dealt to members in a circle.

Members are in Kafka's member order (static by instance id first, then by member id); a
member not subscribed to a partition's topic is skipped, and the circle keeps its position
between partitions, as Kafka's CircularIterator does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    member_order_key,
    subscribed_topics,
    to_assignment,
)
from .java_order import java_key


class RoundRobinAssignor:
    """Kafka's ``org.apache.kafka.clients.consumer.RoundRobinAssignor``."""

    name = "roundrobin"
    rebalance_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        counts = subscribed_topics(members, partitions_per_topic)
        circle = sorted(members, key=lambda m: member_order_key(m, members[m]))
        topics_of = {m: set(members[m].topics) for m in members}
        lists: dict[str, list[TopicPartition]] = {m: [] for m in members}
        position = 0
        for topic in sorted(counts, key=java_key):
            for partition in range(counts[topic]):
                # Someone subscribes to every topic in `counts`, so this ends within a lap.
                while topic not in topics_of[circle[position]]:
                    position = (position + 1) % len(circle)
                lists[circle[position]].append((topic, partition))
                position = (position + 1) % len(circle)
        return to_assignment(members, lists)

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        return None
