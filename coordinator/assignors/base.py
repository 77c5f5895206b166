"""What every assignor takes and returns.

``assign(members, partitions_per_topic) -> {member_id: {topic: [partitions]}}``: ``members``
maps each member id to its :class:`Subscription` (in the order the JoinGroup response listed
them); ``partitions_per_topic`` maps topic names to partition counts (topics missing from it
are skipped, as Kafka skips topics without metadata). Every member gets an entry, possibly
empty; partitions are sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from .java_order import java_key

#: ``{member_id: {topic: [partition, ...]}}``
Assignment = dict[str, dict[str, list[int]]]
TopicPartition = tuple[str, int]

#: Kafka's AbstractStickyAssignor.DEFAULT_GENERATION.
DEFAULT_GENERATION = -1


class RebalanceProtocol(IntEnum):
    """KIP-429: EAGER revokes everything before rejoining; COOPERATIVE only what moves."""

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's ConsumerProtocolSubscription plus the JoinGroup member fields.

    ``owned_partitions`` is what the member owns now (cooperative protocols; for the
    server-side assignors: the member's current target assignment). ``generation_id`` < 0
    means "not known", as in Kafka's ``Subscription.generationId()``.
    """

    topics: Sequence[str]
    owned_partitions: Mapping[str, Sequence[int]] = field(default_factory=dict)
    generation_id: int = DEFAULT_GENERATION
    user_data: bytes | None = None
    rack_id: str | None = None
    group_instance_id: str | None = None


class Assignor(Protocol):
    """A partition assignor, named as Kafka names it in JoinGroup protocols."""

    @property
    def name(self) -> str: ...

    @property
    def rebalance_protocols(self) -> tuple[RebalanceProtocol, ...]: ...

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment: ...

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        """User data for the member's next subscription; ``owned`` is its last assignment
        (None before its first one) and ``generation_id`` that assignment's generation."""
        ...


class AssignorError(RuntimeError):
    """An assignor met a state it cannot assign from (Kafka's IllegalStateException)."""


def tp_key(tp: TopicPartition) -> tuple[str, int]:
    """Kafka's TopicPartitionComparator: topic (Java order), then partition."""
    return java_key(tp[0]), tp[1]


def member_order_key(member_id: str, sub: Subscription) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members first by instance id, then member ids."""
    if sub.group_instance_id is not None:
        return 0, java_key(sub.group_instance_id)
    return 1, java_key(member_id)


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def subscribed_topics(
    members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
) -> dict[str, int]:
    """The partition counts of topics someone subscribes to and that have partitions
    (AbstractPartitionAssignor.assign(Cluster, ...) builds exactly this map)."""
    wanted = {t for sub in members.values() for t in sub.topics}
    return {t: n for t, n in partitions_per_topic.items() if t in wanted and n > 0}


def flatten(owned: Mapping[str, Sequence[int]]) -> list[TopicPartition]:
    return [(topic, p) for topic, parts in owned.items() for p in parts]


def group_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in sorted(partitions, key=tp_key):
        out.setdefault(topic, []).append(p)
    return out


def to_assignment(
    members: Iterable[str], lists: Mapping[str, Iterable[TopicPartition]]
) -> Assignment:
    return {m: group_by_topic(lists.get(m, ())) for m in members}
