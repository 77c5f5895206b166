"""ConsumerProtocolSubscription / ConsumerProtocolAssignment v0-3 against bytes written out
from Kafka's schemas: int16 version, then the non-flexible struct.

Subscription: Topics []string (0+); UserData nullable bytes (0+); OwnedPartitions
[]{Topic, Partitions []int32} (1+); GenerationId int32 (2+); RackId nullable string (3+).
Assignment (same layout in every version): AssignedPartitions []{Topic, Partitions []int32};
UserData nullable bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import DecodeError

from .wirebytes import b, i16, i32, s

TOPICS = ["orders", "payments"]
OWNED = [TopicPartition(topic="orders", partitions=[0, 2])]
SUBSCRIPTION = ConsumerProtocolSubscription(
    topics=TOPICS, user_data=b"\x01\x02", owned_partitions=OWNED, generation_id=7, rack_id="r1"
)

_topics = i32(2) + s("orders") + s("payments")
_user_data = b(b"\x01\x02")
_owned = i32(1) + s("orders") + i32(2) + i32(0) + i32(2)
_generation = i32(7)
_rack = s("r1")

SUBSCRIPTION_BYTES = {
    0: i16(0) + _topics + _user_data,
    1: i16(1) + _topics + _user_data + _owned,
    2: i16(2) + _topics + _user_data + _owned + _generation,
    3: i16(3) + _topics + _user_data + _owned + _generation + _rack,
}


def _as_of(version: int) -> ConsumerProtocolSubscription:
    """The subscription as a member writing ``version`` can express it (defaults after)."""
    return ConsumerProtocolSubscription(
        topics=TOPICS,
        user_data=b"\x01\x02",
        owned_partitions=OWNED if version >= 1 else [],
        generation_id=7 if version >= 2 else -1,
        rack_id="r1" if version >= 3 else None,
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_bytes(version: int) -> None:
    wire = SUBSCRIPTION_BYTES[version]
    assert encode_subscription(_as_of(version), version) == wire
    assert decode_subscription(wire) == (version, _as_of(version))


def test_subscription_nulls_and_empties() -> None:
    # v3 with null user data and null rack: int32 -1 and int16 -1.
    wire = i16(3) + i32(1) + s("t") + b(None) + i32(0) + i32(-1) + s(None)
    sub = ConsumerProtocolSubscription(topics=["t"])
    assert encode_subscription(sub, 3) == wire
    assert decode_subscription(wire) == (3, sub)
    # Empty (not null) user data stays empty.
    empty = i16(0) + i32(0) + b(b"")
    assert decode_subscription(empty)[1].user_data == b""


def test_subscription_newer_version_is_read_with_our_layout() -> None:
    # A v4 member appends fields we do not know: read as v3, trailing bytes ignored.
    wire = i16(4) + SUBSCRIPTION_BYTES[3][2:] + b"\x00\x00\x00\x2a"
    assert decode_subscription(wire) == (4, SUBSCRIPTION)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_golden_bytes(version: int) -> None:
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[
            TopicPartition(topic="orders", partitions=[1]),
            TopicPartition(topic="payments", partitions=[0, 3]),
        ],
        user_data=None,
    )
    wire = (
        i16(version)
        + i32(2)
        + (s("orders") + i32(1) + i32(1))
        + (s("payments") + i32(2) + i32(0) + i32(3))
        + b(None)
    )
    assert encode_assignment(assignment, version) == wire
    assert decode_assignment(wire) == (version, assignment)


def test_assignment_with_user_data() -> None:
    wire = i16(0) + i32(0) + b(b"sticky")
    assert decode_assignment(wire) == (
        0,
        ConsumerProtocolAssignment(assigned_partitions=[], user_data=b"sticky"),
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_truncated_subscriptions_raise_decode_error(version: int) -> None:
    wire = SUBSCRIPTION_BYTES[version]
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            decode_subscription(wire[:cut])


def test_truncated_assignments_and_bad_headers_raise_decode_error() -> None:
    wire = i16(1) + i32(1) + s("t") + i32(1) + i32(0) + b(None)
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            decode_assignment(wire[:cut])
    with pytest.raises(DecodeError, match="negative version"):
        decode_assignment(i16(-1) + wire[2:])
    with pytest.raises(DecodeError):
        decode_subscription(i16(0) + i32(-5) + b(None))  # negative topic count
    with pytest.raises(DecodeError):
        decode_subscription(i16(0) + i32(1) + i16(2) + b"\xff\xfe" + b(None))  # bad UTF-8


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=80))
def test_garbage_raises_only_decode_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except DecodeError:
            pass


_tp = st.builds(
    TopicPartition, topic=st.text(max_size=8), partitions=st.lists(st.integers(0, 2**31 - 1))
)


@settings(max_examples=100, deadline=None)
@given(
    version=st.integers(0, 3),
    topics=st.lists(st.text(max_size=8), max_size=4),
    user_data=st.none() | st.binary(max_size=16),
    owned=st.lists(_tp, max_size=3),
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | st.text(max_size=8),
)
def test_subscription_round_trips(
    version: int,
    topics: list[str],
    user_data: bytes | None,
    owned: list[TopicPartition],
    generation: int,
    rack: str | None,
) -> None:
    sub = ConsumerProtocolSubscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=owned if version >= 1 else [],
        generation_id=generation if version >= 2 else -1,
        rack_id=rack if version >= 3 else None,
    )
    wire = encode_subscription(sub, version)
    assert decode_subscription(wire) == (version, sub)
    assert encode_subscription(decode_subscription(wire)[1], version) == wire


@settings(max_examples=50, deadline=None)
@given(
    version=st.integers(0, 3),
    assigned=st.lists(_tp, max_size=3),
    user_data=st.none() | st.binary(max_size=16),
)
def test_assignment_round_trips(
    version: int, assigned: list[TopicPartition], user_data: bytes | None
) -> None:
    a = ConsumerProtocolAssignment(assigned_partitions=assigned, user_data=user_data)
    wire = encode_assignment(a, version)
    assert decode_assignment(wire) == (version, a)
