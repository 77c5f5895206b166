"""ConsumerGroupHeartbeat over real sockets: topics by id on the wire, and offsets committed
and fetched with the member's epoch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coordinator.client.connection import connect
from coordinator.settings.config import Settings
from coordinator.shared.catalog import topic_id_for
from coordinator.shell.server import Server
from protocol.apis.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
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

#: The memory store keeps no topic id key: ids are UUIDv5 of the name (catalog.py).
ORDERS = topic_id_for("orders")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0), store="memory", data_dir=tmp_path, topics=(("orders", 3),)
        )
    )
    await srv.start()
    yield srv
    await srv.stop()


async def test_a_member_joins_commits_and_fetches_at_its_epoch(server: Server) -> None:
    c = await connect("127.0.0.1", server.port)
    join = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m-1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["orders"],
        subscribed_topic_regex="",  # librdkafka sends "" for "no regex"
        topic_partitions=[],
    )
    r = await c.request(join, 1, ConsumerGroupHeartbeatResponse)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m-1", 1)
    assert r.heartbeat_interval_ms == 5000
    assert r.assignment is not None
    [tp] = r.assignment.topic_partitions
    assert (tp.topic_id, sorted(tp.partitions)) == (ORDERS, [0, 1, 2])

    beat = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m-1",
        member_epoch=1,
        topic_partitions=[
            ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=ORDERS, partitions=[0, 1, 2])
        ],
    )
    r = await c.request(beat, 1, ConsumerGroupHeartbeatResponse)
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 1, None)  # nothing changed

    def commit(epoch: int) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=epoch,
            member_id="m-1",
            topics=[
                OffsetCommitRequestTopic(
                    topic_id=ORDERS,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=1, committed_offset=7)
                    ],
                )
            ],
        )

    stale = await c.request(commit(2), 10, OffsetCommitResponse)
    assert stale.topics[0].partitions[0].error_code == ErrorCode.STALE_MEMBER_EPOCH
    done = await c.request(commit(1), 10, OffsetCommitResponse)
    assert done.topics[0].partitions[0].error_code == 0

    def fetch(epoch: int) -> OffsetFetchRequest:
        topics = [OffsetFetchRequestTopics(topic_id=ORDERS, partition_indexes=[1])]
        group = OffsetFetchRequestGroup(
            group_id="g", member_id="m-1", member_epoch=epoch, topics=topics
        )
        return OffsetFetchRequest(groups=[group], require_stable=True)

    refused = await c.request(fetch(5), 10, OffsetFetchResponse)
    assert refused.groups[0].error_code == ErrorCode.STALE_MEMBER_EPOCH
    fetched = await c.request(fetch(1), 10, OffsetFetchResponse)
    assert fetched.groups[0].error_code == 0
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == 7

    describe = ConsumerGroupDescribeRequest(group_ids=["g", "h"])
    described = await c.request(describe, 1, ConsumerGroupDescribeResponse)
    g, h = described.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignor_name) == (
        0,
        "Stable",
        1,
        "uniform",
    )
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.member_type) == ("m-1", 1, 1)
    [tp] = m.assignment.topic_partitions
    assert (tp.topic_id, tp.topic_name, tp.partitions) == (ORDERS, "orders", [0, 1, 2])
    assert h.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    leave = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=-1)
    r = await c.request(leave, 1, ConsumerGroupHeartbeatResponse)
    assert (r.error_code, r.member_epoch) == (0, -1)
    c.close()


@pytest.mark.integration  # starts the regex worker process
async def test_a_member_subscribes_by_regular_expression(server: Server) -> None:
    c = await connect("127.0.0.1", server.port)

    def join(pattern: str) -> ConsumerGroupHeartbeatRequest:
        return ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id="m-1",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=[],
            subscribed_topic_regex=pattern,
            topic_partitions=[],
        )

    bad = await c.request(join("ord[ers"), 1, ConsumerGroupHeartbeatResponse)
    assert bad.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert bad.error_message == (
        "SubscribedTopicRegex `ord[ers` is not a valid regular expression: missing ]: [ers."
    )
    r = await c.request(join("(^ord.*)"), 1, ConsumerGroupHeartbeatResponse)  # librdkafka's form
    assert r.error_code == 0 and r.assignment is not None
    [tp] = r.assignment.topic_partitions
    assert (tp.topic_id, sorted(tp.partitions)) == (ORDERS, [0, 1, 2])
    c.close()
