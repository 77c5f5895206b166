"""The worked examples of the seed documents, with the seeds' results.

Seed 003 (a 2020 article on Kafka's rebalance strategies) walks through round robin, range
and sticky; seed 000 splits 5 partitions over 4 consumer threads.
"""

from __future__ import annotations

from coordinator.assignors import ASSIGNORS, Subscription
from coordinator.assignors.sticky_user_data import encode_sticky_user_data

# Seed 003: t0, t1, t2 with 1, 2, 3 partitions; C0 takes t0, C1 t0+t1, C2 t0+t1+t2.
UNEVEN_TOPICS = {"t0": 1, "t1": 2, "t2": 3}
UNEVEN_MEMBERS = {
    "C0": Subscription(["t0"]),
    "C1": Subscription(["t0", "t1"]),
    "C2": Subscription(["t0", "t1", "t2"]),
}


def test_round_robin_deals_partitions_in_a_circle_skipping_non_subscribers() -> None:
    assert ASSIGNORS["roundrobin"].assign(UNEVEN_MEMBERS, UNEVEN_TOPICS) == {
        "C0": {"t0": [0]},
        "C1": {"t1": [0]},
        "C2": {"t1": [1], "t2": [0, 1, 2]},
    }


def test_range_gives_the_first_consumers_the_extra_partition_per_topic() -> None:
    members = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    assert ASSIGNORS["range"].assign(members, {"t0": 3, "t1": 3}) == {
        "C0": {"t0": [0, 1], "t1": [0, 1]},
        "C1": {"t0": [2], "t1": [2]},
    }


def test_sticky_initial_assignment_is_balanced_where_round_robin_is_not() -> None:
    expected = {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    assert ASSIGNORS["sticky"].assign(UNEVEN_MEMBERS, UNEVEN_TOPICS) == expected
    assert ASSIGNORS["cooperative-sticky"].assign(UNEVEN_MEMBERS, UNEVEN_TOPICS) == expected


EVEN_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
ALL = ["t0", "t1", "t2", "t3"]
# What the seed's sticky example starts from (the same as round robin's, and Kafka's).
EVEN_INITIAL = {
    "C0": {"t0": [0], "t1": [1], "t3": [0]},
    "C1": {"t0": [1], "t2": [0], "t3": [1]},
    "C2": {"t1": [0], "t2": [1]},
}


def test_sticky_initial_assignment_of_four_two_partition_topics() -> None:
    members = {c: Subscription(ALL) for c in ("C0", "C1", "C2")}
    assert ASSIGNORS["sticky"].assign(members, EVEN_TOPICS) == EVEN_INITIAL
    assert ASSIGNORS["roundrobin"].assign(members, EVEN_TOPICS) == EVEN_INITIAL


def test_sticky_after_c1_dies_keeps_every_surviving_assignment() -> None:
    # Survivors report their previous assignment and generation in the user data.
    members = {
        c: Subscription(ALL, user_data=encode_sticky_user_data(EVEN_INITIAL[c], 1))
        for c in ("C0", "C2")
    }
    result = ASSIGNORS["sticky"].assign(members, EVEN_TOPICS)
    for consumer in ("C0", "C2"):
        for topic, partitions in EVEN_INITIAL[consumer].items():
            assert set(partitions) <= set(result[consumer][topic])
    assert {c: sum(map(len, a.values())) for c, a in result.items()} == {"C0": 4, "C2": 4}
    # The seed (and Kafka's javadoc) hand C1's t0-1, t2-0, t3-1 out one by one to the least
    # loaded member: t0-1 -> C2, t2-0 -> C0, t3-1 -> C2. Since Kafka 2.8 (KAFKA-9987) equal
    # subscriptions take the "constrained" path, which deals them round-robin to the members
    # below quota in id order: t0-1 -> C0, t2-0 -> C2, t3-1 -> C2. Both keep all 5 survivors
    # and balance 4/4; we follow today's Kafka (checked against its Java classes).
    assert result == {
        "C0": {"t0": [0, 1], "t1": [1], "t3": [0]},
        "C2": {"t1": [0], "t2": [0, 1], "t3": [1]},
    }


def test_sticky_with_unequal_subscriptions_moves_c1s_partitions_like_the_seed() -> None:
    # The seed's one-by-one reassignment is what Kafka's general algorithm still does when
    # subscriptions differ: C3 subscribes to another topic only, so the path is "general".
    members = {
        c: Subscription(ALL, user_data=encode_sticky_user_data(EVEN_INITIAL[c], 1))
        for c in ("C0", "C2")
    }
    members["C3"] = Subscription(["x"], user_data=encode_sticky_user_data({"x": [0]}, 1))
    result = ASSIGNORS["sticky"].assign(members, {**EVEN_TOPICS, "x": 1})
    assert result["C0"] == {"t0": [0], "t1": [1], "t2": [0], "t3": [0]}
    assert result["C2"] == {"t0": [1], "t1": [0], "t2": [1], "t3": [1]}
    assert result["C3"] == {"x": [0]}


def test_seed_000_five_partitions_over_four_consumer_threads() -> None:
    # P0->C1_0, P1->C1_0, P2->C1_1, P3->C2_0, P4->C2_1: 5 // 4 = 1 each, the first gets the extra.
    threads = {t: Subscription(["topic"]) for t in ("C1_0", "C1_1", "C2_0", "C2_1")}
    assert ASSIGNORS["range"].assign(threads, {"topic": 5}) == {
        "C1_0": {"topic": [0, 1]},
        "C1_1": {"topic": [2]},
        "C2_0": {"topic": [3]},
        "C2_1": {"topic": [4]},
    }
