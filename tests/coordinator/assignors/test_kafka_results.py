"""Ties fall as in Kafka's Java assignors. Expected values were produced by Kafka's own
classes (trunk 2024-10) on the same inputs."""

from __future__ import annotations

import pytest

from coordinator.assignors import ASSIGNORS, Subscription
from coordinator.assignors.java_order import (
    JavaHashSet,
    java_hash_order,
    java_key,
    java_string_hash,
    topic_partition_hash,
)
from coordinator.assignors.sticky_user_data import encode_sticky_user_data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", 99162322),
        ("my-group", -1906497762),
        ("polygenelubricants", -2147483648),
        ("", 0),
        ("\U0001f600", 1772899),  # two UTF-16 code units
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_topic_partition_hash_is_kafkas() -> None:
    assert topic_partition_hash("t", 0) == 31 * 31 + ord("t")


def test_java_key_orders_by_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16, so Java sorts it before U+FF21.
    assert sorted(["\uff21", "\U0001f600"]) == ["\uff21", "\U0001f600"]
    assert sorted(["\uff21", "\U0001f600"], key=java_key) == ["\U0001f600", "\uff21"]
    assert sorted(["b", "a", "ab"], key=java_key) == ["a", "ab", "b"]


def test_hash_order_is_bucket_then_insertion() -> None:
    assert java_hash_order(["member-0", "member-1", "member-z"]) == [
        "member-1",
        "member-0",
        "member-z",
    ]
    # Growing past 12 keys doubles the 16-bucket table; the order stays by bucket.
    keys = [f"k{i}" for i in range(40)]
    order = java_hash_order(keys)
    assert sorted(order) == sorted(keys)
    spread = [(java_string_hash(k) & 0xFFFFFFFF) for k in order]
    buckets = [(h ^ (h >> 16)) & 63 for h in spread]
    assert buckets == sorted(buckets)


def test_java_hash_set_forgets_removed_keys() -> None:
    s: JavaHashSet[str] = JavaHashSet(java_string_hash)
    for key in ("a", "b", "c"):
        s.add(key)
    s.discard("a")
    assert "a" not in s and len(s) == 2 and s.first() in ("b", "c")


OWNERS = {"member-0": [0, 1, 2], "member-1": [3, 4, 5], "member-z": [6]}


def test_cooperative_sticky_lets_the_member_kafka_visits_first_keep_the_extra_partition() -> None:
    # 7 partitions over 3 members: one keeps 3. Kafka's HashMap visits member-1 first.
    members = {
        m: Subscription(["t"], owned_partitions={"t": ps}, generation_id=5)
        for m, ps in OWNERS.items()
    }
    assert ASSIGNORS["cooperative-sticky"].assign(members, {"t": 7}) == {
        "member-0": {"t": [0, 1]},
        "member-1": {"t": [3, 4, 5]},
        "member-z": {"t": [6]},  # t-2 still belongs to member-0: next round
    }


def test_sticky_hands_over_the_revoked_partition_in_the_same_round() -> None:
    members = {
        m: Subscription(["t"], user_data=encode_sticky_user_data({"t": ps}, 5))
        for m, ps in OWNERS.items()
    }
    assert ASSIGNORS["sticky"].assign(members, {"t": 7}) == {
        "member-0": {"t": [0, 1]},
        "member-1": {"t": [3, 4, 5]},
        "member-z": {"t": [2, 6]},
    }


def test_cooperative_sticky_general_path_withholds_partitions_changing_owner() -> None:
    members = {
        "m1": Subscription(
            ["a", "b"], owned_partitions={"a": [0, 1, 2, 3], "b": [0, 1]}, generation_id=3
        ),
        "m2": Subscription(["b"], generation_id=3),
        "m3": Subscription(["a"], owned_partitions={"b": [2]}, generation_id=2),
    }
    assert ASSIGNORS["cooperative-sticky"].assign(members, {"a": 4, "b": 3}) == {
        "m1": {"a": [3], "b": [1]},
        "m2": {},
        "m3": {},
    }


def test_range_puts_static_members_first_by_instance_id() -> None:
    members = {
        "a-dynamic": Subscription(["t"]),
        "z-static": Subscription(["t"], group_instance_id="i-0"),
        "b-static": Subscription(["t"], group_instance_id="i-1"),
    }
    assert ASSIGNORS["range"].assign(members, {"t": 4}) == {
        "z-static": {"t": [0, 1]},
        "b-static": {"t": [2]},
        "a-dynamic": {"t": [3]},
    }
