"""The kept ``uniform`` state (uniform_state.py) against the ``uniform`` assignor run on
the whole group: over random histories of joins, leaves and added partitions, each new
target is as balanced, covers every partition once, and moves no more partitions."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.member import ConsumerMember, Partitions
from coordinator.group.consumer.target import compute_target, update_target
from coordinator.group.consumer.uniform_state import UniformState

TP = tuple[str, int]

# An event: ("join", k) k members join; ("leave", i) the i-th member (mod size) leaves;
# ("grow", i, k) topic i (mod topics) gets k more partitions.
events = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(1, 12)),
        st.tuples(st.just("leave"), st.integers(0, 1000)),
        st.tuples(st.just("grow"), st.integers(0, 3), st.integers(1, 7)),
    ),
    min_size=1,
    max_size=25,
)


def _pairs(target: dict[str, Partitions]) -> dict[TP, str]:
    return {(t, p): m for m, parts in target.items() for t, ps in parts.items() for p in ps}


def _sizes(target: dict[str, Partitions], members: list[str]) -> list[int]:
    return sorted(sum(len(ps) for ps in target.get(m, {}).values()) for m in members)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=st.lists(st.integers(0, 30), min_size=1, max_size=4),
    history=events,
)
def test_each_target_is_as_balanced_and_as_sticky_as_the_whole_assignor(
    counts: list[int], history: list[tuple[object, ...]]
) -> None:
    topics = [f"t{i}" for i in range(len(counts))]
    metadata = {t: n for t, n in zip(topics, counts, strict=True) if n > 0}
    g = ConsumerGroup("g")
    joined = 0
    for event in history:
        if event[0] == "join":
            for _ in range(int(event[1])):  # type: ignore[call-overload]
                g.add(ConsumerMember(f"m{joined}", subscribed_topic_names=tuple(topics)))
                joined += 1
        elif event[0] == "leave" and g.members:
            ids = list(g.members)
            g.remove(ids[int(event[1]) % len(ids)])  # type: ignore[call-overload]
        elif event[0] == "grow":
            topic = topics[int(event[1]) % len(topics)]  # type: ignore[call-overload]
            metadata[topic] = metadata.get(topic, 0) + int(event[2])  # type: ignore[call-overload]
        g.subscription_metadata = dict(metadata)
        before = {m: dict(parts) for m, parts in g.target.items()}
        whole = compute_target(g, "uniform")  # the assignor on the group as it is now
        update_target(g, "uniform")
        g.target_changes.clear()
        members = list(g.members)
        total = sum(metadata.values())
        got = _pairs(g.target)
        if not members:
            assert not got
            continue
        # Every partition of the subscribed topics once, to a member of the group.
        assert sorted(got) == sorted((t, p) for t, n in metadata.items() for p in range(n))
        assert sum(_sizes(g.target, members)) == total
        assert set(got.values()) <= set(members)
        # As balanced as the assignor's answer.
        assert _sizes(g.target, members) == _sizes(whole, members)
        # No more partitions move than when the assignor runs on the whole group.
        previous = _pairs(before)
        moved = sum(1 for tp, m in got.items() if tp in previous and previous[tp] != m)
        moved_whole = sum(
            1 for tp, m in _pairs(whole).items() if tp in previous and previous[tp] != m
        )
        assert moved <= moved_whole


def test_a_computation_visits_only_what_moves() -> None:
    """One member joining a balanced group of 1,000: only the member that gives it a
    partition and the joiner change."""
    g = ConsumerGroup("g", subscription_metadata={"t": 2000})
    for i in range(1000):
        g.add(ConsumerMember(f"m{i}", subscribed_topic_names=("t",)))
    assert update_target(g, "uniform") == 1000
    g.target_changes.clear()
    g.add(ConsumerMember("joiner", subscribed_topic_names=("t",)))
    changed = update_target(g, "uniform")
    # 2,000 over 1,001: 999 members keep 2, one gives one up, the joiner gets it.
    assert changed == 2
    assert sum(len(ps) for ps in g.target["joiner"].values()) == 1
    assert isinstance(g.target_state, UniformState)
    sizes = Counter(sum(len(ps) for ps in g.target[m].values()) for m in g.members)
    assert sizes == Counter({2: 999, 1: 2})


def test_a_heterogeneous_group_goes_back_to_the_whole_assignor() -> None:
    g = ConsumerGroup("g", subscription_metadata={"a": 4, "b": 2})
    g.add(ConsumerMember("x", subscribed_topic_names=("a", "b")))
    g.add(ConsumerMember("y", subscribed_topic_names=("a",)))
    update_target(g, "uniform")
    assert g.target_state is None
    assert sorted(_pairs(g.target)) == [("a", p) for p in range(4)] + [("b", 0), ("b", 1)]
