"""Coordinator partitions spread evenly over live nodes, and move as little as possible."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from coordinator.cluster.plan import plan


def test_one_node_owns_everything():
    assert plan(50, [1], {}) == {p: 1 for p in range(50)}


def test_a_joining_node_takes_only_its_share_from_the_others():
    before = plan(50, [1, 2], {})
    after = plan(50, [1, 2, 3], before)
    moved = {p for p in range(50) if after[p] != before[p]}
    assert Counter(after.values()) == {1: 17, 2: 17, 3: 16}
    assert {after[p] for p in moved} == {3} and len(moved) == 16


def test_a_dead_nodes_partitions_are_spread_and_the_rest_stay():
    before = plan(50, [1, 2, 3], {})
    after = plan(50, [1, 3], {p: n for p, n in before.items() if n != 2})
    assert all(after[p] == n for p, n in before.items() if n != 2)
    assert Counter(after.values()) == {1: 25, 3: 25}


def test_no_live_node_means_no_owner():
    assert plan(50, [], {0: 1}) == {}


@given(
    st.integers(1, 64),
    st.sets(st.integers(0, 9), min_size=1, max_size=6),
    st.dictionaries(st.integers(0, 63), st.integers(0, 9)),
)
def test_every_partition_has_one_owner_and_shares_differ_by_at_most_one(n, live, owners):
    target = plan(n, live, {p: o for p, o in owners.items() if p < n and o in live})
    assert set(target) == set(range(n)) and set(target.values()) <= live
    counts = Counter(target.values())
    shares = [counts.get(node, 0) for node in live]
    assert max(shares) - min(shares) <= 1
