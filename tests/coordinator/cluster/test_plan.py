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


def moves(before: dict[int, int], after: dict[int, int]) -> set[int]:
    return {p for p in before if after.get(p) != before[p]}


def test_a_killed_node_gets_back_its_own_partitions_and_no_other_moves():
    steady = plan(50, [1, 2, 3], {})
    # Node 2 dies: the survivors take its partitions, remembering whose they were.
    survivors = plan(50, [1, 3], steady)
    away = moves(steady, survivors)
    assert away == {p for p, n in steady.items() if n == 2}
    previous = {p: 2 for p in away}
    # Restarted, but not settled yet: nothing is handed to it.
    assert plan(50, [1, 2, 3], survivors, settled=[1, 3], previous=previous) == survivors
    # Settled: exactly its own partitions go back, nothing else moves.
    back = plan(50, [1, 2, 3], survivors, previous=previous)
    assert moves(survivors, back) == away
    assert back == steady


def test_the_first_node_to_renew_after_every_lease_ran_out_takes_nothing_of_the_others():
    steady = plan(50, [1, 2, 3], {})
    first = plan(50, [2], steady, settled=[])
    assert first == {p: 2 for p, n in steady.items() if n == 2}
    second = plan(50, [2, 3], steady, settled=[])
    assert second == {p: n for p, n in steady.items() if n in (2, 3)}


def test_a_node_not_yet_settled_takes_what_nobody_owns():
    assert plan(6, [1], {}, settled=[]) == {p: 1 for p in range(6)}


def test_a_resumed_node_is_given_its_share_only_once_settled():
    steady = plan(10, [1, 2], {})
    alone = plan(10, [1], steady)
    previous = {p: 2 for p in moves(steady, alone)}
    assert plan(10, [1, 2], alone, settled=[1], previous=previous) == alone
    assert plan(10, [1, 2], alone, settled=[1, 2], previous=previous) == steady


@given(
    st.integers(1, 40),
    st.sets(st.integers(0, 5), min_size=1, max_size=5),
    st.sets(st.integers(0, 5)),
    st.dictionaries(st.integers(0, 39), st.integers(0, 7)),
    st.dictionaries(st.integers(0, 39), st.integers(0, 7)),
)
def test_unsettled_nodes_only_keep_or_take_free_and_every_live_owner_is_respected(
    n, live, settled, owners, previous
):
    owners = {p: o for p, o in owners.items() if p < n}
    target = plan(n, live, owners, settled, previous)
    assert set(target.values()) <= live
    for p, node in target.items():
        if node not in settled:  # not settled: its own, or a free one
            assert owners.get(p) in (node, None)
    if settled & live:  # only a dead owner's partition waits, for a settled taker
        assert set(target) == set(range(n))
