"""The versions Kafka 4.4 added to the APIs served here (issue 41), at the API layer: what a
client speaking them gets."""

from __future__ import annotations

from coordinator.settings.config import Settings
from coordinator.upstream.settings import UpstreamSettings
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
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
from tests.coordinator.shell.pipeline import Answer, Pipeline


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


def api_versions(p: Pipeline, cluster_id: str | None, node_id: int) -> ApiVersionsResponse:
    request = ApiVersionsRequest(
        client_software_name="apache-kafka-java",
        client_software_version="4.4.0",
        cluster_id=cluster_id,
        node_id=node_id,
    )
    body = ask(p, request, 5)
    assert isinstance(body, ApiVersionsResponse)
    return body


def test_api_versions_v5_is_advertised_and_checks_the_cluster_and_node_the_client_expects() -> None:
    """KIP-1242 (Kafka 4.4): a client that followed stale metadata to the wrong cluster or
    node is told to rebootstrap; one that names this node, or nothing, gets the keys."""
    p = Pipeline(Settings(cluster_id="ours", node_id=3))
    plain = api_versions(p, None, -1)
    assert plain.error_code == ErrorCode.NONE
    ranges = {k.api_key: (k.min_version, k.max_version) for k in plain.api_keys}
    assert ranges[18] == (0, 5)
    assert api_versions(p, "ours", 3).api_keys == plain.api_keys
    for cluster_id, node_id in (("theirs", 3), ("ours", 4)):
        refused = api_versions(p, cluster_id, node_id)
        assert (refused.error_code, refused.api_keys) == (ErrorCode.REBOOTSTRAP_REQUIRED, [])
    for cluster_id, node_id in (("ours", -1), (None, 3)):  # both or neither
        refused = api_versions(p, cluster_id, node_id)
        assert (refused.error_code, refused.api_keys) == (ErrorCode.INVALID_REQUEST, [])


def test_api_versions_v5_at_an_upstream_brokers_address_expects_that_brokers_node_id() -> None:
    """In front of an upstream, each upstream broker has an address of the daemon, presented
    to clients as node upstream id + offset: that is the node id a client expects there."""
    upstream = UpstreamSettings(bootstrap=(("127.0.0.1", 9092),))
    p = Pipeline(Settings(cluster_id="ours", node_id=0, upstream=upstream))
    at_broker_2 = p.connect()
    at_broker_2.conn.upstream_broker = 2

    def error(node_id: int) -> int:
        request = ApiVersionsRequest(
            client_software_name="a",
            client_software_version="1",
            cluster_id="ours",
            node_id=node_id,
        )
        answer = p.send(at_broker_2, request, 5)
        assert isinstance(answer, Answer) and isinstance(answer.body, ApiVersionsResponse)
        return answer.body.error_code

    assert error(1002) == ErrorCode.NONE
    assert error(0) == ErrorCode.REBOOTSTRAP_REQUIRED
