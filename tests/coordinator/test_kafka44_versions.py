"""The versions Kafka 4.4 added to the APIs served here (issue 41), at the API layer: what a
client speaking them gets."""

from __future__ import annotations

from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.errors import ErrorCode

from .pipeline import Answer, Pipeline


def ask(p: Pipeline, body: object, version: int) -> object:
    answer = p.send(p.connect(), body, version)  # type: ignore[arg-type]
    assert isinstance(answer, Answer), answer
    return answer.body


def test_fetch_v18_with_a_high_watermark_is_answered_as_v17() -> None:
    p = Pipeline()
    orders = p.node.catalog.create("orders", 2)
    part = FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1024, high_watermark=5)
    request = FetchRequest(
        max_wait_ms=0, min_bytes=1, topics=[FetchTopic(topic_id=orders.topic_id, partitions=[part])]
    )
    body = ask(p, request, 18)
    assert isinstance(body, FetchResponse)
    answer = body.responses[0].partitions[0]
    assert (body.responses[0].topic_id, answer.partition_index, answer.error_code) == (
        orders.topic_id,
        1,
        ErrorCode.NONE,
    )


def list_offsets(p: Pipeline, timestamp: int, version: int) -> tuple[int, int]:
    wanted = [
        ListOffsetsTopic(
            name="orders",
            partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)],
        )
    ]
    timeout = {"timeout_ms": 500} if version >= 10 else {}
    body = ask(p, ListOffsetsRequest(replica_id=-1, topics=wanted, **timeout), version)
    assert isinstance(body, ListOffsetsResponse)
    answer = body.topics[0].partitions[0]
    return answer.error_code, answer.offset


def test_list_offsets_v11_earliest_pending_upload_has_no_offset_on_a_virtual_topic() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 1)
    # KIP-1023's -6 needs v11: no record waits for upload, so there is no offset.
    assert list_offsets(p, -6, 11) == (ErrorCode.NONE, -1)
    assert list_offsets(p, -1, 11) == (ErrorCode.NONE, 0)
    # Asked below the version that introduced it, a special time is refused per partition.
    assert list_offsets(p, -6, 10) == (ErrorCode.UNSUPPORTED_VERSION, -1)
    assert list_offsets(p, -3, 6) == (ErrorCode.UNSUPPORTED_VERSION, -1)
    assert list_offsets(p, -3, 7) == (ErrorCode.NONE, -1)


def test_delete_groups_v3_says_why_a_group_was_not_deleted() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 1)
    commit = OffsetCommitRequest(
        group_id="simple",
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=3)],
            )
        ],
    )
    ask(p, commit, 9)
    body = ask(p, DeleteGroupsRequest(groups_names=["simple", "nope"]), 3)
    assert isinstance(body, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code, r.error_message) for r in body.results] == [
        ("simple", ErrorCode.NONE, None),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND, "The group id does not exist."),
    ]
