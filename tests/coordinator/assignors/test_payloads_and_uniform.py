"""Sticky user data, ConsumerProtocol helpers, and the server-side uniform assignor."""

from __future__ import annotations

import struct

from coordinator.assignors import (
    ASSIGNORS,
    SERVER_ASSIGNORS,
    Subscription,
    assignment_bytes,
    decode_member_assignment,
    decode_member_subscription,
    subscription_bytes,
)
from coordinator.assignors.sticky_user_data import (
    MemberData,
    decode_cooperative_generation,
    decode_sticky_user_data,
    encode_sticky_user_data,
)


def test_sticky_user_data_v1_round_trip_v0_fallback_and_garbage() -> None:
    data = encode_sticky_user_data({"t": [0, 2], "u": [1]}, 7)
    assert decode_sticky_user_data(data) == MemberData([("t", 0), ("t", 2), ("u", 1)], 7)
    assert decode_sticky_user_data(data[:-4]) == MemberData([("t", 0), ("t", 2), ("u", 1)], None)
    assert decode_sticky_user_data(b"\x00\x00\x00\x05") == MemberData([], -1)
    assert decode_sticky_user_data(None) == MemberData([], None)


def test_cooperative_generation_from_user_data() -> None:
    assert decode_cooperative_generation(struct.pack(">i", 4)) == 4
    assert decode_cooperative_generation(b"\x01") == -1
    assert decode_cooperative_generation(None) is None


def test_subscription_bytes_round_trip_like_a_java_consumer() -> None:
    data = subscription_bytes(
        ASSIGNORS["cooperative-sticky"],
        ["b", "a", "b"],
        owned={"b": [3, 1]},
        generation_id=5,
        rack_id="r1",
    )
    sub = decode_member_subscription(data, "static-1")
    assert sub.topics == ["a", "b"]
    assert sub.owned_partitions == {"b": [1, 3]}
    assert (sub.generation_id, sub.rack_id, sub.group_instance_id) == (5, "r1", "static-1")
    assert sub.user_data == struct.pack(">i", 5)
    sticky = subscription_bytes(ASSIGNORS["sticky"], ["a"], last_assignment=None)
    assert decode_member_subscription(sticky, None).user_data is None


def test_assignment_bytes_round_trip() -> None:
    assert decode_member_assignment(assignment_bytes({"t": [2, 0], "u": []})) == {"t": [0, 2]}
    assert decode_member_assignment(b"") == {}


def test_uniform_keeps_current_partitions_within_quota() -> None:
    members = {
        "a": Subscription(["t"], owned_partitions={"t": [0, 1, 2, 3, 4, 5]}),
        "b": Subscription(["t"], owned_partitions={}),
    }
    result = SERVER_ASSIGNORS["uniform"].assign(members, {"t": 6})
    assert sorted(map(len, (r["t"] for r in result.values()))) == [3, 3]
    assert set(result["a"]["t"]) <= {0, 1, 2, 3, 4, 5}
    assert len(set(result["a"]["t"])) == 3


def test_uniform_heterogeneous_balances_topic_by_topic() -> None:
    members = {
        "a": Subscription(["x", "y"], owned_partitions={"x": [0, 1, 2, 3], "y": [0, 1, 2, 3]}),
        "b": Subscription(["y"]),
        "c": Subscription(["x"]),
    }
    result = SERVER_ASSIGNORS["uniform"].assign(members, {"x": 4, "y": 4})
    assert sorted(sum(map(len, r.values())) for r in result.values()) == [2, 3, 3]
    assert set(result["b"]) == {"y"} and set(result["c"]) == {"x"}
    # a gave up partitions but received none it did not own.
    assert all(set(ps) <= {0, 1, 2, 3} for ps in result["a"].values())


def test_server_range_is_the_client_range() -> None:
    members = {m: Subscription(["t", "u"]) for m in ("m2", "m1", "m3")}
    topics = {"t": 5, "u": 2}
    assert SERVER_ASSIGNORS["range"].assign(members, topics) == ASSIGNORS["range"].assign(
        members, topics
    )
