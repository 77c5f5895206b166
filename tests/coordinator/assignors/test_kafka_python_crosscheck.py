"""Our assignors against kafka-python 3.0.12's on random groups.

range and roundrobin must agree exactly. Two kafka-python bugs limit the inputs: its range
sort drops members when static and dynamic members alternate (``itertools.groupby`` over
unsorted input), and its roundrobin crashes (KeyError) as soon as it must skip a member
not subscribed to a topic. So: members all static or all dynamic, and roundrobin only with
identical subscriptions.

kafka-python's sticky assignor is a port of Kafka's pre-2.8 algorithm; ours is today's.
With identical subscriptions ours must be at least as balanced and at least as sticky.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from coordinator.assignors import ASSIGNORS, Assignment, Subscription
from coordinator.assignors.sticky_user_data import encode_sticky_user_data
from tests.hypothesis_profiles import examples

CHECK = settings(
    max_examples=examples(40, fast=15), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class FakeCluster:
    def __init__(self, topics: dict[str, int]) -> None:
        self._topics = topics

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self._topics[topic])) if topic in self._topics else None

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._topics)


def kafka_python(
    assignor: Any, members: dict[str, Subscription], topics: dict[str, int]
) -> Assignment:
    joined = [
        SimpleNamespace(
            member_id=m,
            group_instance_id=s.group_instance_id,
            metadata=SimpleNamespace(topics=list(s.topics), user_data=s.user_data or b""),
        )
        for m, s in members.items()
    ]
    result = assignor.assign(FakeCluster(topics), joined)
    return {m: {t: sorted(ps) for t, ps in a.assigned_partitions if ps} for m, a in result.items()}


def non_empty(assignment: Assignment) -> Assignment:
    return {m: {t: ps for t, ps in parts.items() if ps} for m, parts in assignment.items()}


@st.composite
def groups(draw: st.DrawFn, identical: bool) -> tuple[dict[str, Subscription], dict[str, int]]:
    topics = draw(
        st.dictionaries(
            st.sampled_from([f"t{i}" for i in range(20)]),
            st.integers(1, 100),
            min_size=1,
            max_size=20,
        )
    )
    names = sorted(topics)
    ids = draw(
        st.lists(
            st.text("abcxyz019-", min_size=1, max_size=6), min_size=1, max_size=50, unique=True
        )
    )
    static = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = {
        m: Subscription(
            common
            if identical
            else draw(st.lists(st.sampled_from(names), min_size=1, unique=True)),
            group_instance_id=f"instance-{m}" if static else None,
        )
        for m in ids
    }
    return members, topics


@CHECK
@given(groups(identical=False))
def test_range_matches_kafka_python(group: tuple[dict[str, Subscription], dict[str, int]]) -> None:
    members, topics = group
    assert non_empty(ASSIGNORS["range"].assign(members, topics)) == kafka_python(
        RangePartitionAssignor, members, topics
    )


@CHECK
@given(groups(identical=True))
def test_roundrobin_matches_kafka_python(
    group: tuple[dict[str, Subscription], dict[str, int]],
) -> None:
    members, topics = group
    assert non_empty(ASSIGNORS["roundrobin"].assign(members, topics)) == kafka_python(
        RoundRobinPartitionAssignor, members, topics
    )


def _sizes(assignment: Assignment) -> list[int]:
    return [sum(map(len, parts.values())) for parts in assignment.values()]


def _kept(before: Assignment, after: Assignment) -> int:
    return sum(
        len(
            {(t, p) for t, ps in before.get(m, {}).items() for p in ps}
            & {(t, p) for t, ps in parts.items() for p in ps}
        )
        for m, parts in after.items()
    )


@CHECK
@given(groups(identical=True), st.data())
def test_sticky_is_as_balanced_and_as_sticky_as_kafka_python(
    group: tuple[dict[str, Subscription], dict[str, int]], data: st.DataObject
) -> None:
    members, topics = group
    ours_first = ASSIGNORS["sticky"].assign(members, topics)
    theirs_first = kafka_python(StickyPartitionAssignor(), members, topics)
    assert max(_sizes(ours_first)) - min(_sizes(ours_first)) <= 1

    survivors = data.draw(st.sets(st.sampled_from(sorted(members)), min_size=1))
    joiners = data.draw(st.integers(0, 3))
    common = next(iter(members.values())).topics
    names = [*sorted(survivors), *(f"joiner-{i}" for i in range(joiners))]

    def second_round(first: Assignment) -> dict[str, Subscription]:
        return {
            m: Subscription(
                common, user_data=encode_sticky_user_data(first[m], 1) if m in first else None
            )
            for m in names
        }

    ours = ASSIGNORS["sticky"].assign(second_round(ours_first), topics)
    theirs = kafka_python(StickyPartitionAssignor(), second_round(theirs_first), topics)
    ours_spread = max(_sizes(ours)) - min(_sizes(ours))
    theirs_spread = max(_sizes(theirs)) - min(_sizes(theirs))
    assert ours_spread <= max(theirs_spread, 1)
    assert _kept(ours_first, ours) >= _kept(theirs_first, theirs)
