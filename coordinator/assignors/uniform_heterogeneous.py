"""The ``uniform`` assignor for members with different subscriptions (Kafka's
UniformHeterogeneousAssignmentBuilder).

1. Keep every current partition whose topic the member still subscribes to.
2. Topics by partitions per subscriber (descending), then subscriber count, then name: deal
   each topic's unassigned partitions to its least loaded subscribers.
3. Up to 16 sweeps over the topics with 2+ subscribers: move a topic's partitions from its
   most loaded to its least loaded subscribers until their sizes differ by at most one;
   stop after a full sweep without moves.

Members are numbered in the order given; ties between equally loaded members go to the
lower number. ``_Balancer`` tracks the least and the most loaded ranges of a topic's
subscribers sorted by load, as Kafka's MemberAssignmentBalancer does.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import Assignment, Subscription
from .java_order import java_key

MAX_ITERATION_COUNT = 16


class _Balancer:
    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = 0  # [0, least_end): the least loaded range
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0  # [most_start, most_end): the most loaded range
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        self.members = sorted(members, key=lambda m: (self.sizes[m], m))
        self.least_end = 0
        self.least_count = self.sizes[self.members[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_count = self.sizes[self.members[-1]] + 1
        self.next_most = len(self.members) - 1
        return self.sizes[self.members[-1]] - self.sizes[self.members[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (
                self.least_end < len(self.members)
                and self.sizes[self.members[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Emptied by exclusions: restart from the next member down.
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (
                self.most_start > 0
                and self.sizes[self.members[self.most_start - 1]] == self.most_count
            ):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by next_most_loaded: it has nothing to give up."""
        i, last = self.next_most + 1, self.most_end - 1
        self.members[i], self.members[last] = self.members[last], self.members[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class HeterogeneousBuilder:
    def __init__(
        self,
        order: list[str],
        members: Mapping[str, Subscription],
        counts: Mapping[str, int],
        topics_of: Mapping[str, list[str]],
    ) -> None:
        self.order = order
        self.members = members
        self.counts = counts
        self.topics_of = topics_of
        self.sizes = [0] * len(order)
        self.subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(order):
            for topic in topics_of[member]:
                self.subscribers.setdefault(topic, []).append(index)
        self.owners = {t: [-1] * counts[t] for t in self.subscribers}
        self.assignment: dict[int, dict[str, set[int]]] = {i: {} for i in range(len(order))}

    def _topic_order(self, topic: str) -> tuple[float, int, str]:
        subscribers = len(self.subscribers[topic])
        return -self.counts[topic] / subscribers, subscribers, java_key(topic)

    def build(self) -> Assignment:
        for index, member in enumerate(self.order):
            subscribed = set(self.topics_of[member])
            for topic, parts in self.members[member].owned_partitions.items():
                if topic not in subscribed:
                    continue
                for p in parts:
                    if 0 <= p < self.counts[topic]:
                        self._add(topic, p, index)
        unassigned = {
            t: [p for p, owner in enumerate(owners) if owner == -1]
            for t, owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic in sorted((t for t, ps in unassigned.items() if ps), key=self._topic_order):
            balancer.initialize(self.subscribers[topic])
            for p in unassigned[topic]:
                self._add(topic, p, balancer.next_least_loaded())
        movable = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if movable:
            self._balance_topics(sorted(movable, key=self._topic_order))
        return {
            self.order[i]: {t: sorted(ps) for t, ps in topics.items()}
            for i, topics in self.assignment.items()
        }

    def _add(self, topic: str, partition: int, index: int) -> None:
        previous = self.owners[topic][partition]
        if previous != -1:
            self.assignment[previous][topic].discard(partition)
            self.sizes[previous] -= 1
        self.assignment[index].setdefault(topic, set()).add(partition)
        self.owners[topic][partition] = index
        self.sizes[index] += 1

    def _balance_topics(self, topics: list[str]) -> None:
        balancer = _Balancer(self.sizes)
        last_rebalanced = -1
        for _ in range(MAX_ITERATION_COUNT):
            for i, topic in enumerate(topics):
                if i == last_rebalanced:
                    return  # a full sweep without moves
                if self._balance_topic(topic, balancer) > 0 or last_rebalanced == -1:
                    last_rebalanced = i

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        # Partitions grouped by owner, so each owner's partitions form one range.
        partitions = sorted(range(self.counts[topic]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            giver = balancer.next_most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = partitions[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._add(topic, partition, taker)
            moved += 1
        return moved
