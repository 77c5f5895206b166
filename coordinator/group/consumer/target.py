"""The target assignment, computed by a server-side assignor (Kafka's
TargetAssignmentBuilder): every member with its subscribed topics that exist, and its
current target as what it owns, so the assignor keeps partitions where they are."""

from __future__ import annotations

from coordinator.assignors import SERVER_ASSIGNORS, Subscription

from .group import ConsumerGroup
from .member import Partitions
from .uniform_state import UniformState

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


def _homogeneous(g: ConsumerGroup, metadata: dict[str, int]) -> bool:
    """Every member subscribes to every subscribed topic that exists (kept counts: no scan)."""
    size = len(g.members)
    return all(g.topic_subscribers[t] == size for t in metadata)


def update_target(g: ConsumerGroup, assignor: str) -> int:
    """Bring ``g.target`` to a new target assignment; returns how many members' targets
    changed (each is marked to be written). A homogeneous group under ``uniform`` goes
    through the kept state (uniform_state.py), at the cost of what moves; otherwise the
    assignor runs on the whole group."""
    metadata = g.subscription_metadata
    if not g.members:
        g.target.clear()
        g.target_state = None
        return 0
    if assignor == "uniform" and metadata and _homogeneous(g, metadata):
        state = g.target_state
        if isinstance(state, UniformState) and state.fits(metadata):
            state.grow(metadata)
            changed = state.apply(g, g.target_changes)
        else:
            state, changed = UniformState.build(g, metadata)
        changed |= state.balance()
        g.target_state = state
        for member_id in changed:
            g.target[member_id] = state.target_of(member_id)
            g.dirty_members.add(member_id)
        return len(changed)
    g.target_state = None
    target = compute_target(g, assignor)
    count = 0
    for member_id, parts in target.items():
        if g.target.get(member_id) != parts:  # only what changed is written, as in Kafka
            g.dirty_members.add(member_id)
            count += 1
    g.target = target
    return count
