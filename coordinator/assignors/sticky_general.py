"""Sticky assignment for differing subscriptions (Kafka's GeneralAssignmentBuilder).

1. Keep every owned partition whose owner still subscribes to its topic.
2. Hand each unassigned partition (topics with fewer potential consumers first) to the
   least loaded member that may take it.
3. Move partitions from members with 2+ more than another potential owner until no such
   move is left, preferring to move a partition back to its owner of an older generation,
   and undoing a move that reverses an earlier one (``PartitionMovements``) so partitions
   do not ping-pong between two members. If the result is not better balanced than step 2
   (sum of pairwise size differences), step 2's result is kept.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Mapping

from .base import Subscription, TopicPartition, tp_key, unique
from .java_order import JavaHashSet, java_key, topic_partition_hash
from .sticky_ownership import Ownership
from .sticky_user_data import MemberData

ConsumerPair = tuple[str, str]  # (source member, destination member)


class _MembersBySize:
    """A TreeSet of members ordered by (assigned count, member id). As in Kafka, a member is
    removed before its count changes and added back afterwards."""

    def __init__(self, sizes: dict[str, list[TopicPartition]]) -> None:
        self._sizes = sizes
        self._keys: list[tuple[int, str, str]] = []

    def _key(self, member: str) -> tuple[int, str, str]:
        return len(self._sizes[member]), java_key(member), member

    def add(self, member: str) -> None:
        bisect.insort(self._keys, self._key(member))

    def remove(self, member: str) -> None:
        key = self._key(member)
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            del self._keys[i]

    def members(self) -> list[str]:
        return [k[2] for k in self._keys]

    def first(self) -> str:
        return self._keys[0][2]

    def last(self) -> str:
        return self._keys[-1][2]

    def __bool__(self) -> bool:
        return bool(self._keys)


class PartitionMovements:
    """Moves made during balancing, by topic and (source, destination) pair."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, ConsumerPair] = {}
        self.by_topic: dict[str, dict[ConsumerPair, JavaHashSet[TopicPartition]]] = {}

    def _forget(self, tp: TopicPartition) -> ConsumerPair:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].discard(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: TopicPartition, pair: ConsumerPair) -> None:
        self.moves[tp] = pair
        pairs = self.by_topic.setdefault(tp[0], {})
        if pair not in pairs:
            pairs[pair] = JavaHashSet(lambda t: topic_partition_hash(t[0], t[1]))
        pairs[pair].add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            source = self._forget(tp)[0]
            if source != new:  # not simply going back where it came from
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """Moving ``tp`` old -> new; if some partition of the topic earlier went new -> old,
        move that one back instead."""
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


class GeneralAssignmentBuilder:
    def __init__(
        self,
        order: list[str],
        members: Mapping[str, Subscription],
        member_data: Mapping[str, MemberData],
        ownership: Ownership,
        topics: Mapping[str, int],
    ) -> None:
        self.order = order
        self.members = members
        self.member_data = member_data
        self.max_generation = ownership.max_generation
        self.topics = topics
        self.total_partitions = sum(topics.values())
        self.current: dict[str, list[TopicPartition]] = {
            m: list(ownership.owned.get(m, [])) for m in order
        }
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in topics}
        self.consumer_topics: dict[str, list[str]] = {}
        self.consumer_topic_set: dict[str, set[str]] = {}
        for member in order:
            subscribed = [t for t in unique(members[member].topics) if t in topics]
            self.consumer_topics[member] = subscribed
            self.consumer_topic_set[member] = set(subscribed)
            for topic in subscribed:
                self.topic_consumers[topic].append(member)
        self.owner: dict[TopicPartition, str] = {
            tp: m for m, parts in self.current.items() for tp in parts
        }
        sorted_topics = sorted(
            self.topic_consumers, key=lambda t: (len(self.topic_consumers[t]), java_key(t))
        )
        self.sorted_partitions = [(t, p) for t in sorted_topics for p in range(topics[t])]
        self.by_size = _MembersBySize(self.current)
        self.movements = PartitionMovements()
        self.revocation_required = False

    # -- the steps ---------------------------------------------------------------------------

    def build(self) -> dict[str, list[TopicPartition]]:
        previous = self._previous_owners()
        kept = self._keep_owned_partitions()
        unassigned = [tp for tp in self.sorted_partitions if tp not in kept]
        for member in self.current:
            self.by_size.add(member)
        self._balance(previous, unassigned)
        for parts in self.current.values():
            parts.sort(key=tp_key)
        return self.current

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """Claims of members older than the newest generation: where partitions came from."""
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for member in self.order:
            data = self.member_data[member]
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > -1:
                generation = -1
            else:
                continue
            for tp in data.partitions:
                if tp not in previous or generation > previous[tp][1]:
                    previous[tp] = (member, generation)
        return previous

    def _keep_owned_partitions(self) -> set[TopicPartition]:
        kept: set[TopicPartition] = set()
        for member, parts in self.current.items():
            subscribed = set(self.members[member].topics)
            for tp in list(parts):
                if tp[0] not in self.topic_consumers:
                    parts.remove(tp)
                    self.owner.pop(tp, None)
                elif tp[0] not in subscribed:
                    parts.remove(tp)
                    self.revocation_required = True
                else:
                    kept.add(tp)
        return kept

    def _balance(
        self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]
    ) -> None:
        initializing = not self.current[self.by_size.last()]
        for tp in unassigned:
            if self.topic_consumers[tp[0]]:
                self._assign_to_least_loaded(tp)

        fixed_partitions = {
            (t, p)
            for t, consumers in self.topic_consumers.items()
            if len(consumers) < 2
            for p in range(self.topics[t])
        }
        reassignable = [tp for tp in self.sorted_partitions if tp not in fixed_partitions]
        unassigned = [tp for tp in unassigned if tp not in fixed_partitions]
        fixed: dict[str, list[TopicPartition]] = {}
        for member in self.consumer_topics:
            if not self._can_participate(member):
                self.by_size.remove(member)
                fixed[member] = self.current.pop(member)

        before = copy.deepcopy(self.current)
        owners_before = dict(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, previous)
        moved = self._perform_reassignments(reassignable, previous)
        if not initializing and moved and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.owner = owners_before
        self.current.update(fixed)

    def _assign_to_least_loaded(self, tp: TopicPartition) -> None:
        for member in self.by_size.members():
            if tp[0] in self.consumer_topic_set[member]:
                self.by_size.remove(member)
                self.current[member].append(tp)
                self.owner[tp] = member
                self.by_size.add(member)
                return

    def _max_assignment_size(self, member: str) -> int:
        subscribed = self.consumer_topics[member]
        if len(subscribed) == len(self.topics):
            return self.total_partitions
        return sum(self.topics[t] for t in subscribed)

    def _can_participate(self, member: str) -> bool:
        if len(self.current[member]) < self._max_assignment_size(member):
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in self.current[member])

    def _is_balanced(self) -> bool:
        if not self.by_size:
            return True
        low = len(self.current[self.by_size.first()])
        high = len(self.current[self.by_size.last()])
        if low >= high - 1:
            return True
        # A member short of its maximum must not be able to take a partition from a member
        # holding 2+ more (Kafka scans every partition; the busiest owner per topic is enough).
        busiest: dict[str, int] = {}
        for parts in self.current.values():
            size = len(parts)
            for topic, _ in parts:
                if size > busiest.get(topic, -1):
                    busiest[topic] = size
        for member in self.current:
            size = len(self.current[member])
            if size == self._max_assignment_size(member):
                continue
            if any(busiest.get(t, -1) > size + 1 for t in self.consumer_topics[member]):
                return False
        return True

    def _perform_reassignments(
        self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        performed = False
        # Kafka loops until nothing moves; the bound only guards against a cycle.
        for _ in range(4 * len(partitions) + 16):
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.owner[tp]
                load = len(self.current[consumer])
                earlier = previous.get(tp)
                # Kafka would fail on an earlier owner that is fixed (not in `current`).
                if (
                    earlier is not None
                    and earlier[0] in self.current
                    and load > len(self.current[earlier[0]]) + 1
                ):
                    self._reassign(tp, earlier[0])
                    performed = modified = True
                    continue
                if any(load > len(self.current[o]) + 1 for o in self.topic_consumers[tp[0]]):
                    new = next(
                        m for m in self.by_size.members() if tp[0] in self.consumer_topic_set[m]
                    )
                    self._reassign(tp, new)
                    performed = modified = True
            if not modified:
                break
        return performed

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        moving = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[moving]
        self.by_size.remove(old)
        self.by_size.remove(new)
        self.movements.move(moving, old, new)
        self.current[old].remove(moving)
        self.current[new].append(moving)
        self.owner[moving] = new
        self.by_size.add(new)
        self.by_size.add(old)


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """Sum of |size difference| over all member pairs (0 = perfectly balanced)."""
    sizes = sorted(len(parts) for parts in assignment.values())
    n = len(sizes)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))
