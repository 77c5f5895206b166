"""Properties every assignor keeps, over random groups (up to 50 members, 20 topics,
100 partitions per topic)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.assignors import ASSIGNORS, SERVER_ASSIGNORS, Assignment, Assignor, Subscription
from coordinator.assignors.sticky_user_data import encode_sticky_user_data
from tests.hypothesis_profiles import examples

PROPERTY_SETTINGS = settings(
    max_examples=examples(25, fast=10), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
ALL_ASSIGNORS: list[Assignor] = [*ASSIGNORS.values(), *SERVER_ASSIGNORS.values()]

topic_counts = st.dictionaries(
    st.sampled_from([f"t{i}" for i in range(20)]), st.integers(1, 100), min_size=1, max_size=20
)


@st.composite
def groups(
    draw: st.DrawFn, identical: bool = False
) -> tuple[dict[str, Subscription], dict[str, int]]:
    topics = draw(topic_counts)
    names = sorted(topics)
    count = draw(st.integers(1, 50))
    ids = draw(
        st.lists(
            st.text("abcdef0123", min_size=1, max_size=8),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    if identical:
        common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        subs = {m: common for m in ids}
    else:
        subs = {m: draw(st.lists(st.sampled_from(names), min_size=1, unique=True)) for m in ids}
    static = draw(st.booleans())
    members = {
        m: Subscription(ts, group_instance_id=f"i-{m}" if static else None)
        for m, ts in subs.items()
    }
    return members, topics


def owners(assignment: Assignment) -> Counter[tuple[str, int]]:
    return Counter((t, p) for parts in assignment.values() for t, ps in parts.items() for p in ps)


def sizes(assignment: Assignment) -> list[int]:
    return [sum(len(ps) for ps in parts.values()) for parts in assignment.values()]


@PROPERTY_SETTINGS
@given(groups())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    group: tuple[dict[str, Subscription], dict[str, int]],
) -> None:
    members, topics = group
    subscribed = {t for s in members.values() for t in s.topics}
    wanted = {(t, p) for t in subscribed for p in range(topics[t])}
    for assignor in ALL_ASSIGNORS:
        result = assignor.assign(members, topics)
        assert set(result) == set(members), assignor.name
        counted = owners(result)
        assert set(counted) == wanted and set(counted.values()) <= {1}, assignor.name
        for member, parts in result.items():
            assert set(parts) <= set(members[member].topics), assignor.name


@PROPERTY_SETTINGS
@given(groups(identical=True))
def test_identical_subscriptions_are_balanced(
    group: tuple[dict[str, Subscription], dict[str, int]],
) -> None:
    members, topics = group
    for name in ("roundrobin", "sticky", "cooperative-sticky"):
        counts = sizes(ASSIGNORS[name].assign(members, topics))
        assert max(counts) - min(counts) <= 1, name
    counts = sizes(SERVER_ASSIGNORS["uniform"].assign(members, topics))
    assert max(counts) - min(counts) <= 1


def _next_round(
    name: str, members: dict[str, Subscription], previous: Assignment, generation: int
) -> dict[str, Subscription]:
    if name == "sticky":
        return {
            m: Subscription(
                s.topics, user_data=encode_sticky_user_data(previous.get(m, {}), generation)
            )
            for m, s in members.items()
        }
    return {
        m: Subscription(s.topics, owned_partitions=previous.get(m, {}), generation_id=generation)
        for m, s in members.items()
    }


@PROPERTY_SETTINGS
@given(groups(identical=True), st.data())
def test_sticky_survivors_keep_their_partitions_when_balance_allows(
    group: tuple[dict[str, Subscription], dict[str, int]], data: st.DataObject
) -> None:
    members, topics = group
    total = sum(topics[t] for t in next(iter(members.values())).topics)
    for name in ("sticky", "cooperative-sticky"):
        first = ASSIGNORS[name].assign(members, topics)
        survivors = data.draw(st.sets(st.sampled_from(sorted(members)), min_size=1))
        joiners = data.draw(st.integers(0, 3))
        second = {m: members[m] for m in survivors}
        common = next(iter(members.values())).topics
        second.update({f"new-{i}": Subscription(common) for i in range(joiners)})
        result = ASSIGNORS[name].assign(_next_round(name, second, first, 1), topics)
        min_quota = total // len(second)
        for m in survivors:
            before = {(t, p) for t, ps in first[m].items() for p in ps}
            after = {(t, p) for t, ps in result[m].items() for p in ps}
            assert len(before & after) >= min(len(before), min_quota), name
            if not joiners and max(sizes(first)) <= min_quota:
                assert before <= after, name


@PROPERTY_SETTINGS
@given(groups(), st.data())
def test_cooperative_sticky_never_assigns_what_another_member_still_owns(
    group: tuple[dict[str, Subscription], dict[str, int]], data: st.DataObject
) -> None:
    members, topics = group
    assignor = ASSIGNORS["cooperative-sticky"]
    first = assignor.assign(members, topics)
    # The next round: some members left, some changed their subscriptions.
    survivors = data.draw(st.sets(st.sampled_from(sorted(members)), min_size=1))
    names = sorted(topics)
    second = {
        m: Subscription(
            data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
            if data.draw(st.booleans())
            else members[m].topics,
            owned_partitions=first[m],
            generation_id=1,
        )
        for m in survivors
    }
    result = assignor.assign(second, topics)
    for member, parts in result.items():
        for topic, partitions in parts.items():
            for p in partitions:
                holders = {
                    other
                    for other, sub in second.items()
                    if other != member and p in sub.owned_partitions.get(topic, [])
                }
                assert not holders, (member, topic, p, holders)
    counted = owners(result)
    assert set(counted.values()) <= {1}
