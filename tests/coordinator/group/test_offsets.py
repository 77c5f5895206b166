"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (spec 4.4, 4.12)."""

from __future__ import annotations

import struct

import pytest

from coordinator.group import GroupConfig
from coordinator.group.classic.states import DEAD, GroupState
from coordinator.group.records import GroupDeletedRecord, OffsetCommitRecord, OffsetDeleteRecord
from coordinator.group.results import PartitionOffset, TopicOffsets
from protocol.consumer import subscription_topics
from protocol.errors import DecodeError, ErrorCode

from .harness import GROUP, Harness

DAY = 24 * 3600 * 1000


def subscription(*topics: str, version: int = 3) -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1) + b"\x00" * 12  # later versions append fields


def consumer_group(h: Harness, *topics: str) -> tuple[str, int]:
    token = h.join(protocols=[("range", subscription(*topics))])
    h.advance(3000)
    member_id = h.join_result(token).member_id
    h.sync(member_id, 1, None, [(member_id, b"a")])
    return member_id, 1


# -- OffsetCommit -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "code"), [(8, ErrorCode.ILLEGAL_GENERATION), (9, ErrorCode.GROUP_ID_NOT_FOUND)]
)
def test_commit_with_generation_to_unknown_group(version, code):
    h = Harness()
    assert h.commit({("t", 0): 1}, member_id="m", generation=1, version=version) == {("t", 0): code}
    assert GROUP not in h.co.groups


def test_commit_without_generation_to_unknown_group_creates_a_simple_group():
    h = Harness()
    assert h.commit({("t", 0): 5, ("t", 1): 6}) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.NONE,
    }
    g = h.group()
    assert (g.state, g.protocol_type) == (GroupState.EMPTY, None)
    assert h.co.list_groups([], [])[0].protocol_type == ""
    assert h.co.fetch_offsets(GROUP, [("t", [0, 1])], h.now).topics == [
        TopicOffsets("t", [PartitionOffset(0, 5, -1, "", 0), PartitionOffset(1, 6, -1, "", 0)])
    ]


def test_commit_to_dead_group_is_coordinator_not_available():
    h = Harness()
    h.commit({("t", 0): 1})
    h.group().transition(DEAD, 0)
    assert h.commit({("t", 0): 1, ("u", 3): 1}) == {
        ("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ("u", 3): ErrorCode.COORDINATOR_NOT_AVAILABLE,
    }


def test_commit_from_unknown_member_is_unknown_member():
    h = Harness()
    h.stable_group(1)
    assert h.commit({("t", 0): 1}, member_id="stranger", generation=1) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }


def test_commit_with_illegal_generation():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    assert h.commit({("t", 0): 1}, member_id=leader, generation=generation + 1) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }


def test_commit_with_unknown_instance_id_is_unknown_member():
    h = Harness()
    (a,), generation = h.stable_group(1, static=True)
    assert h.commit({("t", 0): 1}, member_id=a, generation=generation, instance="x") == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }


def test_commit_with_fenced_instance_id():
    h = Harness()
    (_a,), generation = h.stable_group(1, static=True)
    result = h.commit(
        {("t", 0): 1}, member_id="other", generation=generation, instance="instance-0"
    )
    assert result == {("t", 0): 82}


def test_commit_while_completing_rebalance_is_rebalance_in_progress():
    h = Harness()
    token = h.join()
    h.advance(3000)
    member_id = h.join_result(token).member_id
    assert h.commit({("t", 0): 1}, member_id=member_id, generation=1) == {
        ("t", 0): ErrorCode.REBALANCE_IN_PROGRESS
    }


def test_commit_during_preparing_rebalance_with_current_generation_is_accepted():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    h.join(leader)
    assert h.commit({("t", 0): 1}, member_id=follower, generation=generation) == {
        ("t", 0): ErrorCode.NONE
    }


def test_commit_without_member_and_generation_to_a_non_empty_group_is_unknown_member():
    h = Harness()
    h.stable_group(1)
    assert h.commit({("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}


def test_commit_with_retention_time_sets_an_expire_timestamp():
    h = Harness(now=1000)
    h.commit({("t", 0): 1}, retention=5000, version=2)
    (record,) = [r for r in h.records if isinstance(r, OffsetCommitRecord)]
    assert (record.commit_timestamp_ms, record.expire_timestamp_ms) == (1000, 6000)


def test_manual_commit_to_an_empty_group_does_not_validate_member_or_instance():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.leave(leader)
    assert h.commit({("t", 0): 1}, member_id="whoever", instance="any") == {
        ("t", 0): ErrorCode.NONE
    }


def test_simple_group_commit_with_instance_id_is_accepted():
    h = Harness()
    h.commit({("t", 0): 1})
    assert h.commit({("t", 0): 2}, member_id="m", instance="i") == {("t", 0): ErrorCode.NONE}


def test_commit_and_fetch_offsets_of_an_empty_group():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.commit({("t", 0): 7}, member_id=leader, generation=generation, metadata="md")
    h.leave(leader)
    assert h.commit({("t", 1): 8}) == {("t", 1): ErrorCode.NONE}
    fetched = h.co.fetch_offsets(GROUP, None, h.now)
    assert fetched.topics == [
        TopicOffsets(
            "t",
            [
                PartitionOffset(0, 7, -1, "md", ErrorCode.NONE),
                PartitionOffset(1, 8, -1, "", ErrorCode.NONE),
            ],
        )
    ]


def test_metadata_over_the_limit_is_rejected_per_partition():
    h = Harness(GroupConfig(offset_metadata_max_bytes=4))
    assert h.commit({("t", 0): 1}, metadata="12345") == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }
    assert h.commit({("t", 0): 1}, metadata="1234") == {("t", 0): ErrorCode.NONE}
    # Java's String.length(): a non-BMP character counts twice.
    assert h.commit({("t", 0): 1}, metadata="12\U0001f600") == {("t", 0): ErrorCode.NONE}
    assert h.commit({("t", 0): 1}, metadata="123\U0001f600") == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }


# -- OffsetFetch -------------------------------------------------------------------------------


def test_fetch_from_unknown_group_reads_no_offsets():
    h = Harness()
    r = h.co.fetch_offsets("nope", [("t", [0, 1])], 0)
    assert (r.error_code, r.topics) == (
        0,
        [
            TopicOffsets(
                "t",
                [
                    PartitionOffset(0, -1, -1, "", ErrorCode.NONE),
                    PartitionOffset(1, -1, -1, "", ErrorCode.NONE),
                ],
            )
        ],
    )


def test_fetch_all_from_unknown_group_is_empty():
    assert Harness().co.fetch_offsets("nope", None, 0).topics == []


def test_fetch_from_dead_group_reads_no_offsets():
    h = Harness()
    h.commit({("t", 0): 1})
    h.group().transition(DEAD, 0)
    assert h.co.fetch_offsets(GROUP, [("t", [0])], 0).topics == [
        TopicOffsets("t", [PartitionOffset(0, -1, -1, "", ErrorCode.NONE)])
    ]


def test_fetch_of_an_unknown_partition_reads_no_offset():
    h = Harness()
    h.commit({("t", 0): 1})
    assert h.co.fetch_offsets(GROUP, [("t", [0, 9])], 0).topics == [
        TopicOffsets("t", [PartitionOffset(0, 1, -1, "", 0), PartitionOffset(9, -1, -1, "", 0)])
    ]


# -- OffsetDelete -------------------------------------------------------------------------------


def test_offset_delete_of_unknown_or_dead_group_is_group_id_not_found():
    h = Harness()
    not_found = ErrorCode.GROUP_ID_NOT_FOUND
    assert h.delete_offsets([("t", [0])], group="nope")[:2] == (not_found, {})
    h.commit({("t", 0): 1})
    h.group().transition(DEAD, 0)
    assert h.delete_offsets([("t", [0])])[:2] == (not_found, {})


def test_offset_delete_of_a_non_empty_non_consumer_group_is_non_empty_group():
    h = Harness()
    token = h.join(protocol_type="connect")
    h.advance(3000)
    assert h.result(token) is not None
    assert h.delete_offsets([("t", [0])])[:2] == (ErrorCode.NON_EMPTY_GROUP, {})


def test_offset_delete_of_a_subscribed_topic_is_refused():
    h = Harness()
    member_id, generation = consumer_group(h, "t")
    h.commit({("t", 0): 1, ("u", 0): 1}, member_id=member_id, generation=generation)
    error, parts, effects = h.delete_offsets([("t", [0]), ("u", [0, 1])])
    assert (error, parts) == (
        ErrorCode.NONE,
        {
            ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            ("u", 0): ErrorCode.NONE,
            ("u", 1): ErrorCode.NONE,
        },
    )
    assert effects.records == [OffsetDeleteRecord(GROUP, "u", 0)]
    assert h.co.fetch_offsets(GROUP, [("u", [0])], 0).topics == [
        TopicOffsets("u", [PartitionOffset(0, -1, -1, "", ErrorCode.NONE)])
    ]


def test_offset_delete_of_a_consumer_group_with_unparsable_metadata_refuses_every_topic():
    h = Harness()
    token = h.join(protocols=[("range", b"\x00")])
    h.advance(3000)
    member_id = h.join_result(token).member_id
    h.sync(member_id, 1, None, [])
    assert h.delete_offsets([("t", [0])])[:2] == (
        ErrorCode.NONE,
        {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC},
    )


def test_offset_delete_of_an_empty_group():
    h = Harness()
    h.commit({("t", 0): 1})
    error, parts, effects = h.delete_offsets([("t", [0])])
    assert (error, parts, effects.records) == (
        ErrorCode.NONE,
        {("t", 0): ErrorCode.NONE},
        [OffsetDeleteRecord(GROUP, "t", 0)],
    )


# -- expiry (spec 4.12) ---------------------------------------------------------------------------


def test_offsets_of_an_empty_group_expire_retention_after_it_became_empty():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=leader, generation=generation)
    committed = h.now
    for _ in range(2):
        h.advance(5000)
        h.heartbeat(leader, generation)
    h.leave(leader)  # Empty from now on
    became_empty = h.now
    assert became_empty == committed + 10000
    h.apply(h.co.expire_offsets(became_empty + DAY - 1, DAY))
    assert GROUP in h.co.groups
    effects = h.apply(h.co.expire_offsets(became_empty + DAY, DAY))
    assert effects.records == [OffsetDeleteRecord(GROUP, "t", 0), GroupDeletedRecord(GROUP)]
    assert GROUP not in h.co.groups


def test_stable_consumer_group_expires_only_unsubscribed_topics_by_commit_time():
    h = Harness()
    member_id, generation = consumer_group(h, "t")
    h.commit({("t", 0): 1, ("u", 0): 1}, member_id=member_id, generation=generation)
    effects = h.apply(h.co.expire_offsets(h.now + DAY, DAY))
    assert effects.records == [OffsetDeleteRecord(GROUP, "u", 0)]
    assert GROUP in h.co.groups


def test_rebalancing_group_offsets_do_not_expire():
    h = Harness()
    member_id, generation = consumer_group(h, "t")
    h.commit({("u", 0): 1}, member_id=member_id, generation=generation)
    h.join(member_id, protocols=[("range", subscription("t"))])  # leader rejoin: rebalance
    h.join()  # keep it rebalancing
    assert h.co.expire_offsets(h.now + 10 * DAY, DAY).records == []


def test_simple_group_offsets_expire_by_commit_time():
    h = Harness()
    h.commit({("t", 0): 1})
    h.advance(1000)
    h.commit({("t", 1): 1})
    effects = h.apply(h.co.expire_offsets(DAY, DAY))
    assert effects.records == [OffsetDeleteRecord(GROUP, "t", 0)]
    effects = h.apply(h.co.expire_offsets(DAY + 1000, DAY))
    assert effects.records == [OffsetDeleteRecord(GROUP, "t", 1), GroupDeletedRecord(GROUP)]


def test_explicit_retention_overrides_the_default():
    h = Harness()
    h.commit({("t", 0): 1}, retention=5000, version=2)
    assert h.apply(h.co.expire_offsets(4999, DAY)).records == []
    assert h.apply(h.co.expire_offsets(5000, DAY)).records[0] == OffsetDeleteRecord(GROUP, "t", 0)


def test_huge_retention_does_not_overflow():
    h = Harness()
    h.commit({("t", 0): 1})
    assert h.co.expire_offsets(DAY, 2**62).records == []


def test_empty_group_without_offsets_is_deleted_by_the_sweep():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.leave(leader)
    assert h.apply(h.co.expire_offsets(h.now, DAY)).records == [GroupDeletedRecord(GROUP)]


def test_subscription_parser_reads_only_the_version_0_prefix():
    assert subscription_topics(subscription("a", "b", version=7)) == ["a", "b"]
    with pytest.raises(DecodeError):
        subscription_topics(b"\x00\x00\x00\x00\x00\x01\x00\x05ab")


def test_loaded_empty_consumer_group_is_subscribed_to_nothing():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=leader, generation=generation)
    h.leave(leader)
    fresh = Harness()
    fresh.apply(fresh.co.load(h.records, h.now))
    fresh.now = h.now
    assert fresh.delete_offsets([("t", [0])])[:2] == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE})


@pytest.mark.parametrize("protocol_type", ["consumer", "My Protocol"])
def test_offset_delete_of_a_group_its_members_left_deletes_only_the_named_partition(
    protocol_type,
):
    # Kafka: testDeleteOffsetOfEmptyConsumerGroup, testDeleteOffsetOfEmptyNonConsumerGroup
    h = Harness()
    token = h.join(protocol_type=protocol_type, protocols=[("range", subscription("foo"))])
    h.advance(3000)
    member_id = h.join_result(token).member_id
    h.sync(member_id, 1, None, [], protocol_type=protocol_type)
    offsets = {("foo", 0): 37, ("bar", 0): 37}
    assert h.commit(offsets, member_id=member_id, generation=1) == {
        ("foo", 0): ErrorCode.NONE,
        ("bar", 0): ErrorCode.NONE,
    }
    h.leave(member_id)
    assert h.group().state == GroupState.EMPTY
    assert h.delete_offsets([("foo", [0])])[:2] == (ErrorCode.NONE, {("foo", 0): ErrorCode.NONE})
    fetched = h.co.fetch_offsets(GROUP, [("foo", [0]), ("bar", [0])], h.now).topics
    assert fetched == [
        TopicOffsets("foo", [PartitionOffset(0, -1, -1, "")]),
        TopicOffsets("bar", [PartitionOffset(0, 37, -1, "")]),
    ]


def test_the_sweep_deletes_only_empty_groups():
    # Kafka: testClassicGroupMaybeDelete
    h = Harness()
    h.join(group="rebalancing")  # PreparingRebalance, no offsets
    (leader,), _ = h.stable_group(1)
    h.leave(leader)  # Empty, no offsets
    effects = h.apply(h.co.expire_offsets(h.now, DAY))
    assert effects.records == [GroupDeletedRecord(GROUP)]
    assert set(h.co.groups) == {"rebalancing"}


def test_offsets_of_a_non_consumer_group_expire_only_once_it_is_empty():
    # Kafka: testOffsetExpirationCondition (a protocol type other than "consumer")
    h = Harness()
    token = h.join(protocol_type="connect", protocols=[("range", subscription("t"))])
    h.advance(3000)
    member_id = h.join_result(token).member_id
    h.sync(member_id, 1, None, [], protocol_type="connect")
    assert h.commit({("u", 0): 1}, member_id=member_id, generation=1) == {("u", 0): ErrorCode.NONE}
    assert h.co.expire_offsets(h.now + 10 * DAY, DAY).records == []  # Stable: kept
    h.leave(member_id)
    became_empty = h.now
    assert h.co.expire_offsets(became_empty + DAY - 1, DAY).records == []
    effects = h.apply(h.co.expire_offsets(became_empty + DAY, DAY))
    assert effects.records == [OffsetDeleteRecord(GROUP, "u", 0), GroupDeletedRecord(GROUP)]
