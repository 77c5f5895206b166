"""Who owns what before a sticky assignment (AbstractStickyAssignor.allSubscriptionsEqual).

Each member claims partitions (from its user data or its OwnedPartitions, see
``MemberData``). A partition claimed by two members of the same generation is owned by
neither and remembered as doubly claimed; between different generations the newer claim
wins. Claims on topics nobody may be assigned are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .base import DEFAULT_GENERATION, Subscription, TopicPartition, unique
from .sticky_user_data import MemberData


@dataclass(slots=True)
class Ownership:
    all_subscriptions_equal: bool
    #: consumerToOwnedPartitions, in the order Kafka iterates its members.
    owned: dict[str, list[TopicPartition]]
    doubly_claimed: set[TopicPartition] = field(default_factory=set)
    max_generation: int = DEFAULT_GENERATION


def claimed_ownership(
    order: list[str],
    members: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
    topics: Mapping[str, int],
) -> Ownership:
    """``order``: member ids as Kafka iterates its subscriptions map."""
    # Kafka re-initialises its reference set whenever it is still empty, so members with an
    # empty subscription listed before the others count as "equal" and then receive
    # partitions of topics they never subscribed to; we compare sets strictly instead.
    first = set(unique(members[order[0]].topics)) if order else set()
    equal = all(set(unique(members[m].topics)) == first for m in order)
    ownership = Ownership(equal, {})
    owner_of: dict[TopicPartition, str] = {}
    for member in order:
        data = member_data[member]
        generation = DEFAULT_GENERATION if data.generation is None else data.generation
        ownership.max_generation = max(ownership.max_generation, generation)
        claims: list[TopicPartition] = []
        ownership.owned[member] = claims
        for tp in data.partitions:
            if tp[0] not in topics:
                continue
            other = owner_of.get(tp)
            if other is None:
                claims.append(tp)
                owner_of[tp] = member
                continue
            # Kafka reads the other claimant's generation from its subscription, not its data.
            other_generation = max(members[other].generation_id, DEFAULT_GENERATION)
            if generation == other_generation:
                ownership.doubly_claimed.add(tp)
                _remove(ownership.owned[other], tp)
                owner_of[tp] = member
            elif generation > other_generation:
                claims.append(tp)
                _remove(ownership.owned[other], tp)
                owner_of[tp] = member
    return ownership


def _remove(items: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in items:
        items.remove(tp)
