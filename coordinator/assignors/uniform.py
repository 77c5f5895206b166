"""``uniform``: KIP-848's default server-side assignor (Kafka's UniformAssignor).

Input as for every assignor; ``owned_partitions`` is the member's current target assignment.
Homogeneous groups (everyone subscribes to the same topics) keep each member's current
partitions up to its quota and fill the gaps; heterogeneous groups keep what is still
subscribed, deal the rest to the least loaded subscribers and then rebalance topic by topic
(``uniform_heterogeneous``).

Kafka iterates topics by topic id (random UUIDs); we have names, so topics are taken in
name order, which changes only how ties fall. Members are taken in the order of Kafka's
``HashMap`` of member ids, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import Assignment, RebalanceProtocol, Subscription, unique
from .java_order import java_hash_order, java_key
from .uniform_heterogeneous import HeterogeneousBuilder


def _topics_of(sub: Subscription, counts: Mapping[str, int]) -> list[str]:
    # The coordinator resolves subscribed names against metadata; unknown topics drop out.
    return sorted((t for t in unique(sub.topics) if counts.get(t, 0) > 0), key=java_key)


def uniform_homogeneous(
    order: list[str],
    members: Mapping[str, Subscription],
    counts: Mapping[str, int],
    topics: list[str],
) -> Assignment:
    subscribed = set(topics)
    owned_anywhere = {
        (t, p) for m in order for t, ps in members[m].owned_partitions.items() for p in ps
    }
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in owned_anywhere]
    total = sum(counts[t] for t in topics)
    min_quota, extra = divmod(total, len(order))

    assignment: Assignment = {}
    unfilled: list[tuple[str, int]] = []
    for member in order:
        quota = min_quota
        if extra > 0:  # the first members visited get the extra partitions
            quota += 1
            extra -= 1
        kept: dict[str, list[int]] = {}
        owned = members[member].owned_partitions
        for topic, parts in sorted(owned.items(), key=lambda item: java_key(item[0])):
            if topic not in subscribed:
                continue
            ordered = sorted(p for p in parts if p < counts[topic])
            keep, spill = ordered[:quota], ordered[quota:]
            quota -= len(keep)
            if keep:
                kept[topic] = keep
            unassigned.extend((topic, p) for p in spill)
        if quota > 0:
            unfilled.append((member, quota))
        assignment[member] = kept

    cursor = 0
    for member, quota in unfilled:
        for tp in unassigned[cursor : cursor + quota]:
            assignment[member].setdefault(tp[0], []).append(tp[1])
        cursor += quota
    if cursor < len(unassigned):
        raise RuntimeError("partitions were left unassigned")
    return assignment


class UniformAssignor:
    """Server-side ``uniform`` assignor (balance first, then stickiness)."""

    name = "uniform"
    rebalance_protocols = (RebalanceProtocol.COOPERATIVE,)

    def assign(
        self, members: Mapping[str, Subscription], partitions_per_topic: Mapping[str, int]
    ) -> Assignment:
        if not members:
            return {}
        order = java_hash_order(members)
        topics_of = {m: _topics_of(members[m], partitions_per_topic) for m in order}
        all_topics = sorted({t for ts in topics_of.values() for t in ts}, key=java_key)
        if not all_topics:
            return {m: {} for m in members}
        if all(topics_of[m] == topics_of[order[0]] for m in order):
            result = uniform_homogeneous(order, members, partitions_per_topic, all_topics)
        else:
            builder = HeterogeneousBuilder(order, members, partitions_per_topic, topics_of)
            result = builder.build()
        return {
            m: {t: sorted(ps) for t, ps in sorted(result.get(m, {}).items()) if ps} for m in members
        }

    def subscription_user_data(
        self, owned: Mapping[str, Sequence[int]] | None, generation_id: int
    ) -> bytes | None:
        return None
