"""KIP-1251 over a real socket: a member's OffsetCommit at the epoch it had before giving up
partitions (in flight while it moved on, as librdkafka's asynchronous commits during a
revocation are) is taken for the partitions it kept and refused STALE_MEMBER_EPOCH for the
ones it gave up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.settings.config import Settings
from coordinator.shared.catalog import topic_id_for
from coordinator.shell.server import Server
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
from protocol.errors import ErrorCode

ORDERS = topic_id_for("orders")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0), store="memory", data_dir=tmp_path, topics=(("orders", 4),)
        )
    )
    await srv.start()
    yield srv
    await srv.stop()


async def beat(
    c: KafkaConnectionClient, member: str, epoch: int, owned: list[int] | None
) -> ConsumerGroupHeartbeatResponse:
    joining = epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=30000 if joining else -1,
        subscribed_topic_names=["orders"] if joining else None,
        topic_partitions=None
        if owned is None
        else [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=ORDERS, partitions=owned)],
    )
    r = await c.request(request, 1, ConsumerGroupHeartbeatResponse)
    assert r.error_code == 0, r
    return r


def assigned(r: ConsumerGroupHeartbeatResponse) -> list[int]:
    assert r.assignment is not None
    return sorted(p for tp in r.assignment.topic_partitions for p in tp.partitions)


async def test_a_commit_from_before_a_revocation_is_taken_for_the_kept_partitions(
    server: Server,
) -> None:
    c = await connect("127.0.0.1", server.port)
    r = await beat(c, "m-1", 0, [])
    assert (r.member_epoch, assigned(r)) == (1, [0, 1, 2, 3])
    r = await beat(c, "m-2", 0, [])
    assert r.member_epoch == 2
    r = await beat(c, "m-1", 1, [0, 1, 2, 3])  # told to give some up: still epoch 1
    kept = assigned(r)
    assert r.member_epoch == 1 and 0 < len(kept) < 4
    r = await beat(c, "m-1", 1, kept)  # given up: epoch 2
    assert r.member_epoch == 2

    # The commit the member sent at epoch 1, for all four, arrives now.
    commit = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=1,
        member_id="m-1",
        topics=[
            OffsetCommitRequestTopic(
                topic_id=ORDERS,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p)
                    for p in range(4)
                ],
            )
        ],
    )
    answer = await c.request(commit, 10, OffsetCommitResponse)
    got = {p.partition_index: p.error_code for p in answer.topics[0].partitions}
    stale = ErrorCode.STALE_MEMBER_EPOCH
    assert got == {p: 0 if p in kept else stale for p in range(4)}
    c.close()
