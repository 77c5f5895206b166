"""KIP-848 server-side ``range`` keeps current targets like Kafka's group-coordinator
RangeAssignor. Cases and expected results are those of Kafka's RangeAssignorTest
(members A, B, C iterated in name order there, as ours are)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.assignors import ASSIGNORS, SERVER_ASSIGNORS, Assignment, Subscription

RANGE = SERVER_ASSIGNORS["range"]


def sub(topics: Sequence[str], **owned: Sequence[int]) -> Subscription:
    return Subscription(list(topics), owned_partitions=dict(owned))


def assign(members: Mapping[str, Subscription], topics: Mapping[str, int]) -> Assignment:
    return {m: a for m, a in RANGE.assign(members, topics).items() if a}


def test_first_assignment_is_the_plain_range_split() -> None:
    members = {"A": sub(["t1", "t3"]), "B": sub(["t1", "t3"])}
    assert assign(members, {"t1": 3, "t3": 2}) == {
        "A": {"t1": [0, 1], "t3": [0]},
        "B": {"t1": [2], "t3": [1]},
    }


def test_first_assignment_with_different_subscriptions() -> None:
    members = {"A": sub(["t1", "t2"]), "B": sub(["t3"]), "C": sub(["t2", "t3"])}
    assert assign(members, {"t1": 3, "t2": 3, "t3": 2}) == {
        "A": {"t1": [0, 1, 2], "t2": [0, 1]},
        "B": {"t3": [0]},
        "C": {"t2": [2], "t3": [1]},
    }


def test_new_member_gets_nothing_when_partitions_are_all_kept() -> None:
    members = {
        "A": sub(["t1", "t2"], t1=[0], t2=[0]),
        "B": sub(["t1", "t2"], t1=[1], t2=[1]),
        "C": sub(["t1", "t2"]),
    }
    assert assign(members, {"t1": 2, "t2": 2}) == {
        "A": {"t1": [0], "t2": [0]},
        "B": {"t1": [1], "t2": [1]},
    }


def test_added_partitions_go_to_the_member_short_of_its_quota() -> None:
    members = {
        "A": sub(["t1", "t2"], t1=[0, 1], t2=[0, 1]),
        "B": sub(["t1", "t2"], t1=[2], t2=[2]),
    }
    assert assign(members, {"t1": 4, "t2": 4}) == {
        "A": {"t1": [0, 1], "t2": [0, 1]},
        "B": {"t1": [2, 3], "t2": [2, 3]},
    }


def test_joining_member_takes_the_released_middle_partition() -> None:
    members = {
        "A": sub(["t1", "t2"], t1=[0, 1], t2=[0, 1]),
        "B": sub(["t1", "t2"], t1=[2], t2=[2]),
        "C": sub(["t1", "t2"]),
    }
    got = assign(members, {"t1": 3, "t2": 3})
    assert got == {
        "A": {"t1": [0], "t2": [0]},
        "B": {"t1": [2], "t2": [2]},
        "C": {"t1": [1], "t2": [1]},
    }
    # Differs from the stateless split, which gives B partition 1 and C partition 2.
    assert got != ASSIGNORS["range"].assign(members, {"t1": 3, "t2": 3})


def test_joining_member_and_new_partition() -> None:
    members = {
        "A": sub(["t1", "t2"], t1=[0, 1], t2=[0, 1]),
        "B": sub(["t1", "t2"], t1=[2], t2=[2]),
        "C": sub(["t1"]),
    }
    assert assign(members, {"t1": 4, "t2": 3}) == {
        "A": {"t1": [0, 1], "t2": [0, 1]},
        "B": {"t1": [2], "t2": [2]},
        "C": {"t1": [3]},
    }


def test_survivor_takes_everything_after_a_member_leaves() -> None:
    members = {"B": sub(["t1", "t2"], t1=[2], t2=[2])}
    assert assign(members, {"t1": 3, "t2": 3}) == {"B": {"t1": [0, 1, 2], "t2": [0, 1, 2]}}


def test_changed_subscriptions_keep_what_is_still_subscribed() -> None:
    members = {
        "A": sub(["t1"], t1=[0, 1, 2], t2=[0]),
        "B": sub(["t1", "t2", "t3"], t2=[1]),
        "C": sub(["t2"], t2=[2], t3=[0, 1]),
    }
    assert assign(members, {"t1": 3, "t2": 3, "t3": 2}) == {
        "A": {"t1": [0, 1]},
        "B": {"t1": [2], "t2": [0, 1], "t3": [0, 1]},
        "C": {"t2": [2]},
    }


def test_inconsistent_current_targets_still_assign_every_partition_once() -> None:
    members = {"A": sub(["t"], t=[0, 1, 7]), "B": sub(["t"], t=[0, 1])}
    got = RANGE.assign(members, {"t": 4})
    assert sorted(p for a in got.values() for p in a.get("t", [])) == [0, 1, 2, 3]
