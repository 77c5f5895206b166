"""The newest versions Kafka 4.1 serves, at the API layer (issue 21): what changes for a
client that speaks them."""

from __future__ import annotations

from protocol.apis.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode

from .pipeline import Answer, Pipeline


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
