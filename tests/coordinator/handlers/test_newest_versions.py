"""The newest versions Kafka 4.1 serves, at the API layer (issue 21): what changes for a
client that speaks them."""

from __future__ import annotations

import uuid

from protocol.apis.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from protocol.errors import ErrorCode
from tests.coordinator.shell.pipeline import Answer, Pipeline


def ask(p: Pipeline, body: object, version: int) -> object:
    answer = p.send(p.connect(), body, version)  # type: ignore[arg-type]
    assert isinstance(answer, Answer), answer
    return answer.body


def test_describe_groups_v6_says_an_unknown_group_is_not_found_and_v5_says_dead():
    p = Pipeline()
    new = ask(p, DescribeGroupsRequest(groups=["nope"]), 6)
    assert isinstance(new, DescribeGroupsResponse)
    assert (new.groups[0].error_code, new.groups[0].error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    old = ask(p, DescribeGroupsRequest(groups=["nope"]), 5)
    assert isinstance(old, DescribeGroupsResponse)
    assert (old.groups[0].error_code, old.groups[0].group_state) == (ErrorCode.NONE, "Dead")


def test_metadata_v13_and_list_offsets_v10_answer_as_before():
    p = Pipeline()
    p.node.catalog.create("orders", 2)
    meta = ask(p, MetadataRequest(topics=None), 13)
    assert isinstance(meta, MetadataResponse)
    assert meta.error_code == ErrorCode.NONE and [t.name for t in meta.topics] == ["orders"]
    wanted = [
        ListOffsetsTopic(
            name="orders", partitions=[ListOffsetsPartition(partition_index=1, timestamp=-1)]
        )
    ]
    offsets = ask(p, ListOffsetsRequest(replica_id=-1, topics=wanted, timeout_ms=500), 10)
    assert isinstance(offsets, ListOffsetsResponse)
    answer = offsets.topics[0].partitions[0]
    assert (answer.error_code, answer.offset) == (ErrorCode.NONE, 0)


def test_offsets_committed_and_fetched_by_topic_id_at_v10():
    p = Pipeline()
    orders = p.node.catalog.create("orders", 2)
    stranger = uuid.uuid4()
    commit = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                topic_id=orders.topic_id,
                partitions=[OffsetCommitRequestPartition(partition_index=1, committed_offset=7)],
            ),
            OffsetCommitRequestTopic(
                topic_id=stranger,
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
            ),
        ],
    )
    committed = ask(p, commit, 10)
    assert isinstance(committed, OffsetCommitResponse)
    assert [(t.topic_id, t.partitions[0].error_code) for t in committed.topics] == [
        (orders.topic_id, ErrorCode.NONE),
        (stranger, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    asked = [
        OffsetFetchRequestTopics(topic_id=orders.topic_id, partition_indexes=[1]),
        OffsetFetchRequestTopics(topic_id=stranger, partition_indexes=[0]),
    ]
    for topics in (asked, None):  # named topics, then all of them
        request = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", topics=topics)], require_stable=True
        )
        fetched = ask(p, request, 10)
        assert isinstance(fetched, OffsetFetchResponse)
        got = {
            (t.topic_id, q.partition_index): (q.committed_offset, q.error_code)
            for t in fetched.groups[0].topics
            for q in t.partitions
        }
        assert got[(orders.topic_id, 1)] == (7, ErrorCode.NONE)
        if topics is not None:
            assert got[(stranger, 0)] == (-1, ErrorCode.UNKNOWN_TOPIC_ID)
