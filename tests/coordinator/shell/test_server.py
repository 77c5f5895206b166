"""The daemon over real sockets on 127.0.0.1: cluster APIs, version negotiation, ordering,
and what happens to bad input."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coordinator.client.connection import ConnectionClosed, KafkaConnectionClient, connect
from coordinator.group.config import GroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from coordinator.upstream.wire import UPSTREAM_ONLY
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.apis.find_coordinator import FindCoordinatorRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
from protocol.apis.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    settings = Settings(
        listen=("127.0.0.1", 0),
        data_dir=tmp_path,
        topics=(("orders", 3),),
        group=GroupConfig(initial_rebalance_delay_ms=0),
        socket_request_max_bytes=4096,
    )
    srv = Server(settings)
    await srv.start()
    yield srv
    await srv.stop()


async def client(srv: Server) -> KafkaConnectionClient:
    return await connect("127.0.0.1", srv.port)


async def test_api_versions_advertises_exactly_what_is_served(server: Server) -> None:
    c = await client(server)
    resp = await c.request(
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        3,
        ApiVersionsResponse,
    )
    assert resp.error_code == ErrorCode.NONE
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    # Every API the protocol package has a codec for, but those only --upstream forwards.
    assert set(advertised) == set(ApiKey) - UPSTREAM_ONLY
    assert advertised[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert advertised[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)
    assert advertised[11] == (0, 9) and advertised[18] == (0, 5)
    assert advertised[0] == (3, 13)  # Produce is offered, and refused per partition
    c.close()


async def test_api_versions_with_bad_software_name_is_invalid_request(server: Server) -> None:
    c = await client(server)
    resp = await c.request(
        ApiVersionsRequest(client_software_name="-bad", client_software_version="1"), 3
    )
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    c.close()


async def _raw(server: Server, frame: bytes) -> bytes | None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(frame)
    try:
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))[0]
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None  # closed without a reply
    finally:
        writer.close()


def _frame(key: int, version: int, correlation: int, rest: bytes = b"") -> bytes:
    body = struct.pack(">hhih", key, version, correlation, -1) + rest
    return struct.pack(">i", len(body)) + body


async def test_api_versions_above_max_gets_v0_unsupported_version(server: Server) -> None:
    reply = await _raw(server, _frame(18, 9, 77, b"\x00\x01\x01\x00"))
    assert reply is not None
    correlation, body = decode_response(BY_KEY[18], 0, reply)
    assert correlation == 77
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 5)]


@pytest.mark.parametrize(
    "frame",
    [
        _frame(11, 10, 1),  # JoinGroup v10 is not served
        _frame(999, 0, 1),  # unknown API key
        _frame(0, 2, 1),  # Produce below v3 is not served
        _frame(12, 0, 1, b"\x00\x05ab"),  # truncated Heartbeat body
        b"\x00\x00\x00\x02\x00\x0c",  # frame shorter than a header
    ],
    ids=["unsupported-version", "unknown-key", "produce", "truncated-body", "short-frame"],
)
async def test_bad_requests_close_only_that_connection(server: Server, frame: bytes) -> None:
    healthy = await client(server)
    assert await _raw(server, frame) is None
    resp = await healthy.request(ApiVersionsRequest(), 0)
    assert resp.error_code == ErrorCode.NONE
    healthy.close()


async def test_a_produce_with_acks_0_closes_only_that_connection(server: Server) -> None:
    # No answer is expected, so the refusal is the close (as Kafka does).
    healthy = await client(server)
    parts = [PartitionProduceData(index=0, records=b"")]
    body = ProduceRequest(
        acks=0, timeout_ms=1000, topic_data=[TopicProduceData(name="orders", partition_data=parts)]
    )
    assert await _raw(server, encode_request(body, 9, 5, "acks-0")) is None
    resp = await healthy.request(ApiVersionsRequest(), 0)
    assert resp.error_code == ErrorCode.NONE
    healthy.close()


async def test_oversize_frame_is_refused_on_its_size(server: Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(struct.pack(">i", 1 << 30))  # announce 1 GiB, send nothing more
    assert await asyncio.wait_for(reader.read(), 5) == b""  # closed
    writer.close()


async def test_metadata_lists_virtual_topics_led_by_this_node(server: Server) -> None:
    c = await client(server)
    resp = await c.request(MetadataRequest(topics=None), 12)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(0, "127.0.0.1", server.port)]
    [topic] = resp.topics
    assert topic.name == "orders" and topic.error_code == ErrorCode.NONE
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [(0, 0), (1, 0), (2, 0)]
    missing = await c.request(MetadataRequest(topics=[MetadataRequestTopic(name="nope")]), 12)
    assert missing.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    v0 = await c.request(MetadataRequest(topics=[]), 0)
    assert [t.name for t in v0.topics] == ["orders"]  # v0: empty list = every topic
    c.close()


async def test_metadata_by_topic_id_is_invalid_before_v12_and_unknown_ids_say_so(
    server: Server,
) -> None:
    c = await client(server)
    meta = await c.request(MetadataRequest(topics=None), 12)
    orders_id = meta.topics[0].topic_id
    by_id = [MetadataRequestTopic(name=None, topic_id=orders_id)]
    for version in (10, 11):
        # Kafka refuses topic ids before v12; the null name is answered as "" (these
        # versions cannot encode a null name), and the connection stays usable.
        old = await c.request(MetadataRequest(topics=by_id), version)
        assert [(t.error_code, t.name) for t in old.topics] == [(ErrorCode.INVALID_REQUEST, "")]
    found = await c.request(MetadataRequest(topics=by_id), 12)
    assert [(t.error_code, t.name) for t in found.topics] == [(0, "orders")]
    unknown = [MetadataRequestTopic(name=None, topic_id=uuid.uuid4())]
    missing = await c.request(MetadataRequest(topics=unknown), 12)
    assert missing.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    c.close()


async def test_find_coordinator_answers_this_node_for_groups_only(server: Server) -> None:
    c = await client(server)
    old = await c.request(FindCoordinatorRequest(key="g", key_type=0), 3)
    assert (old.error_code, old.node_id, old.port) == (ErrorCode.NONE, 0, server.port)
    batched = await c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4)
    assert [(x.key, x.node_id, x.error_code) for x in batched.coordinators] == [
        ("a", 0, 0),
        ("b", 0, 0),
    ]
    txn = await c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["t"]), 6)
    assert txn.coordinators[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert txn.coordinators[0].node_id == -1
    c.close()


async def test_create_topics_adds_to_the_catalog(server: Server) -> None:
    c = await client(server)
    req = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name="fresh", num_partitions=4, replication_factor=1),
            CreateTopicsRequestCreatableTopic(
                name="orders", num_partitions=1, replication_factor=1
            ),
            CreateTopicsRequestCreatableTopic(name="zero", num_partitions=0, replication_factor=1),
        ]
    )
    resp = await c.request(req, 7)
    assert [(t.name, t.error_code) for t in resp.topics] == [
        ("fresh", 0),
        ("orders", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("zero", ErrorCode.INVALID_PARTITIONS),
    ]
    meta = await c.request(MetadataRequest(topics=[MetadataRequestTopic(name="fresh")]), 9)
    assert len(meta.topics[0].partitions) == 4
    c.close()


async def test_list_offsets_reports_an_empty_log(server: Server) -> None:
    c = await client(server)
    req = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name="orders",
                partitions=[
                    ListOffsetsPartition(partition_index=0, timestamp=-2),
                    ListOffsetsPartition(partition_index=1, timestamp=-1),
                    ListOffsetsPartition(partition_index=7, timestamp=-1),
                ],
            )
        ],
    )
    resp = await c.request(req, 9)
    parts = resp.topics[0].partitions
    assert [(p.error_code, p.offset) for p in parts[:2]] == [(0, 0), (0, 0)]
    assert parts[2].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    c.close()


def _fetch(max_wait_ms: int) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        topics=[
            FetchTopic(
                topic="orders", partitions=[FetchPartition(partition=0, partition_max_bytes=1024)]
            )
        ],
    )


async def test_a_fetch_alone_long_polls(server: Server) -> None:
    c = await client(server)
    loop = asyncio.get_running_loop()
    start = loop.time()
    resp = await c.request(_fetch(300), 12)
    assert loop.time() - start >= 0.25  # it waited out (most of) its max wait
    part = resp.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.records) == (ErrorCode.NONE, 0, b"")
    c.close()


async def test_a_request_behind_a_fetch_ends_its_long_poll_and_answers_stay_in_order(
    server: Server,
) -> None:
    # A fetch has nothing to wait for here: a FindCoordinator queued 500 ms behind every
    # fetch kept librdkafka members looping on a moved coordinator (docs/cluster.md).
    c = await client(server)
    fetch_fut = c.send(_fetch(60_000), 12)
    await asyncio.sleep(0.05)  # the fetch is parked before the next request arrives
    find_fut = c.send(FindCoordinatorRequest(key="g"), 2)
    done_order: list[str] = []
    fetch_fut.add_done_callback(lambda _: done_order.append("fetch"))
    find_fut.add_done_callback(lambda _: done_order.append("find"))
    resp, found = await asyncio.wait_for(asyncio.gather(fetch_fut, find_fut), 20)
    await asyncio.sleep(0)  # let the done-callbacks run
    assert done_order == ["fetch", "find"]  # strictly in request order
    assert resp.responses[0].partitions[0].error_code == ErrorCode.NONE
    assert found.error_code == ErrorCode.NONE
    # Pipelined together, the same.
    both = c.send(_fetch(60_000), 12), c.send(ApiVersionsRequest(), 0)
    await asyncio.wait_for(asyncio.gather(*both), 20)
    c.close()


async def test_pipelined_requests_are_answered_in_order(server: Server) -> None:
    c = await client(server)
    futures = [
        c.send(HeartbeatRequest(group_id="nobody", generation_id=1, member_id="m"), 4)
        for _ in range(50)
    ]
    results = await asyncio.gather(*futures)
    assert all(r.error_code == ErrorCode.UNKNOWN_MEMBER_ID for r in results)
    c.close()


async def test_closed_client_sees_connection_closed(server: Server) -> None:
    c = await client(server)
    c.send_raw(_frame(999, 0, 1))
    await asyncio.wait_for(c.wait_closed(), 5)
    with pytest.raises(ConnectionClosed):
        c.send(ApiVersionsRequest(), 0)
