"""The target assignment, computed by a server-side assignor (Kafka's
TargetAssignmentBuilder): every member with its subscribed topics that exist, and its
current target as what it owns, so the assignor keeps partitions where they are."""

from __future__ import annotations

from coordinator.assignors import SERVER_ASSIGNORS, Subscription

from .group import ConsumerGroup
from .member import Partitions

#: The assignors a member may name in ServerAssignor (group.consumer.assignors).
ASSIGNOR_NAMES: tuple[str, ...] = tuple(SERVER_ASSIGNORS)


def compute_target(g: ConsumerGroup, assignor: str) -> dict[str, Partitions]:
    metadata = g.subscription_metadata
    # Built for every member at every new target: kept cheap (the assignors sort what they
    # need themselves).
    members = {
        m.member_id: Subscription(
            topics=[
                t
                for t in (
                    m.subscribed_topic_names
                    if m.subscribed_topic_regex is None
                    else sorted(g.member_topics(m))
                )
                if t in metadata
            ],
            owned_partitions={
                t: tuple(ps) for t, ps in g.target.get(m.member_id, {}).items() if t in metadata
            },
            rack_id=m.rack_id,
            group_instance_id=m.instance_id,
        )
        for m in g.members.values()
    }
    result = SERVER_ASSIGNORS[assignor].assign(members, metadata)
    return {
        member_id: {t: frozenset(ps) for t, ps in result.get(member_id, {}).items() if ps}
        for member_id in members
    }
