"""``sticky`` and ``cooperative-sticky`` (Kafka's StickyAssignor / CooperativeStickyAssignor).

Both balance first (sizes differ by at most one where subscriptions allow) and then keep as
many partitions with their current owner as possible. They differ in where ownership comes
from and in how partitions move:

* ``sticky`` is eager: members revoke everything before rejoining, so each sends its
  previous assignment and generation in the user data.
* ``cooperative-sticky`` (KIP-429) reads OwnedPartitions and the generation from the
  subscription, and leaves out of this round any partition that still has to be revoked
  from another member; the owner revokes it, rejoins, and the next round hands it over.

Members are visited in the order of Kafka's ``HashMap`` of subscriptions, which is what
decides who keeps an extra partition when several could.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    flatten,
    subscribed_topics,
    to_assignment,
)
from .java_order import java_hash_order
from .sticky_constrained import constrained_assign
from .sticky_general import GeneralAssignmentBuilder
from .sticky_ownership import claimed_ownership
from .sticky_user_data import (
    MemberData,
    decode_cooperative_generation,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)


def sticky_assign(
    members: Mapping[str, Subscription],
    partitions_per_topic: Mapping[str, int],
    member_data: Mapping[str, MemberData],
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str] | None]:
    """(assignment, partitions transferring ownership; None when not tracked)."""
    topics = subscribed_topics(members, partitions_per_topic)
    order = java_hash_order(members)
    ownership = claimed_ownership(order, members, member_data, topics)
    if ownership.all_subscriptions_equal:
        return constrained_assign(ownership, topics)
    builder = GeneralAssignmentBuilder(order, members, member_data, ownership, topics)
    return builder.build(), None


class StickyAssignor:
    """Eager sticky assignor; previous assignments travel in the user data."""

    name = "sticky"
    rebalance_protocols = (RebalanceProtocol.EAGER,)

    def member_data(self, sub: Subscription) -> MemberData:
        return decode_sticky_user_data(sub.user_data)

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        if not members:
            return {}
        data = {m: self.member_data(s) for m, s in members.items()}
        lists, _ = sticky_assign(members, partitions_per_topic, data)
        return to_assignment(members, lists)

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        # Kafka sends nothing until the member has had an assignment.
        if owned is None:
            return None
        return encode_sticky_user_data(owned, generation_id)


class CooperativeStickyAssignor:
    """Cooperative sticky assignor (KIP-429)."""

    name = "cooperative-sticky"
    rebalance_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def member_data(self, sub: Subscription) -> MemberData:
        owned = flatten(sub.owned_partitions)
        if sub.generation_id >= 0:
            return MemberData(owned, sub.generation_id)
        return MemberData(owned, decode_cooperative_generation(sub.user_data))

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        if not members:
            return {}
        data = {m: self.member_data(s) for m, s in members.items()}
        lists, transferring = sticky_assign(members, partitions_per_topic, data)
        if transferring is None:
            transferring = _transferring_ownership(members, lists)
        for tp, member in transferring.items():
            if tp in lists[member]:
                lists[member].remove(tp)
        return to_assignment(members, lists)

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        return encode_cooperative_user_data(generation_id)


def _transferring_ownership(
    members: Mapping[str, Subscription], lists: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """Partitions assigned to a member that does not own them while another still does."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, assigned in lists.items():
        owned = flatten(members[member].owned_partitions)
        owned_set, assigned_set = set(owned), set(assigned)
        added.update((tp, member) for tp in assigned if tp not in owned_set)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: member for tp, member in added.items() if tp in revoked}
