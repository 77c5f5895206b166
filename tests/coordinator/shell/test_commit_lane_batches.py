"""The commit lane's commits of one loop turn, from every connection, go to the store in
one write (one transaction): answered, each on its connection in request order, only once
it is stored; a failed shared write fails every commit in it (NOT_COORDINATOR, as the
general path answers a failed write) and leaves none of their offsets visible. Records
made before a turn's lane commits are written before them, and those made after, after;
metrics count them as the general path does."""

from __future__ import annotations

import asyncio

from coordinator.group.records import OffsetCommitRecord
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.shell.server import KafkaConnection
from coordinator.telemetry.metrics import Metrics
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request
from tests.coordinator.shell.test_pipelined_commits import HeldStore, Recorder, _answers, _settle
from tests.coordinator.shell.test_pipelined_commits import commit as simple_commit

GROUP = "kg"


def member_commit(epoch: int, partition: int, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=epoch,
        member_id="m1",
        topics=[
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )


def connect(runtime: Runtime) -> tuple[KafkaConnection, Recorder]:
    conn = KafkaConnection(runtime, set())
    sink = Recorder()
    conn.transport = sink  # type: ignore[assignment]
    return conn, sink


async def member(runtime: Runtime, store: HeldStore) -> int:
    """A KIP-848 member m1 of GROUP, its records stored: its epoch."""
    conn, _sink = connect(runtime)
    join = ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )
    conn.data_received(encode_request(join, 0, 1, "c"))
    for _ in range(5):
        await _settle()
        while store.pending:
            store.store_one()
    group = runtime.groups.consumer_group(GROUP)
    assert group is not None
    return group.members["m1"].member_epoch


def codes(sink: Recorder, version: int = 9) -> list[int]:
    out = []
    for _, frame in _answers(sink.writes):
        _, body = decode_response(BY_KEY[8], version, frame)
        assert isinstance(body, OffsetCommitResponse)
        out += [p.error_code for t in body.topics for p in t.partitions]
    return out


async def setup() -> tuple[Runtime, HeldStore, int]:
    store = HeldStore()
    runtime = Runtime(Settings(store="memory"), asyncio.get_running_loop(), store)
    runtime.catalog.create("orders", 2)
    epoch = await member(runtime, store)
    assert runtime.commit_lane is not None
    return runtime, store, epoch


async def test_commits_of_a_turn_from_two_connections_share_one_write() -> None:
    runtime, store, epoch = await setup()
    assert runtime.commit_lane is not None
    (one, one_sink), (two, two_sink) = connect(runtime), connect(runtime)
    one.data_received(
        encode_request(member_commit(epoch, 0, 10), 9, 1, "c")
        + encode_request(member_commit(epoch, 0, 11), 9, 2, "c")
    )
    two.data_received(encode_request(member_commit(epoch, 1, 20), 9, 3, "c"))
    await _settle()
    assert runtime.commit_lane.taken == 3
    assert len(store.pending) == 1  # one write for the three
    write, _ = store.pending[0]
    assert [
        (r.partition, r.offset) for r in write.records if isinstance(r, OffsetCommitRecord)
    ] == [
        (0, 10),
        (0, 11),
        (1, 20),
    ]
    assert one_sink.writes == [] and two_sink.writes == []  # nothing before it is stored
    store.store_one()
    await _settle()
    assert [c for c, _ in _answers(one_sink.writes)] == [1, 2]
    assert codes(one_sink) == [0, 0] and codes(two_sink) == [0]
    stored = runtime.groups.offsets.of(GROUP)["orders"]
    assert (stored[0].offset, stored[1].offset) == (11, 20)


async def test_a_failed_shared_write_fails_every_commit_in_it_and_shows_none() -> None:
    runtime, store, epoch = await setup()
    (one, one_sink), (two, two_sink) = connect(runtime), connect(runtime)
    one.data_received(encode_request(member_commit(epoch, 0, 10), 9, 1, "c"))
    two.data_received(encode_request(member_commit(epoch, 1, 20), 9, 2, "c"))
    await _settle()
    assert len(store.pending) == 1
    _, fut = store.pending.pop(0)
    fut.set_exception(OSError("disk full"))
    await _settle()
    assert codes(one_sink) == [ErrorCode.NOT_COORDINATOR]
    assert codes(two_sink) == [ErrorCode.NOT_COORDINATOR]
    assert not one.closed and not two.closed
    assert runtime.groups.offsets.of(GROUP) == {}
    assert runtime.groups.offsets.pending_of(GROUP) == {}
    fetch = OffsetFetchRequest(
        group_id=GROUP, topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 1])]
    )
    one.data_received(encode_request(fetch, 7, 3, "c"))
    await _settle()
    _, fetched = decode_response(BY_KEY[9], 7, _answers(one_sink.writes)[-1][1])
    assert isinstance(fetched, OffsetFetchResponse)
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [-1, -1]


async def test_lane_commits_are_written_after_the_records_before_them_and_before_those_after() -> (
    None
):
    runtime, store, epoch = await setup()
    conn, sink = connect(runtime)
    # A simple commit (the general path), a member's (the lane), a simple one again.
    conn.data_received(
        encode_request(simple_commit(1), 8, 1, "c")
        + encode_request(member_commit(epoch, 0, 10), 9, 2, "c")
        + encode_request(simple_commit(2), 8, 3, "c")
    )
    await _settle()
    written = [
        [(r.group_id, r.offset) for r in write.records if isinstance(r, OffsetCommitRecord)]
        for write, _ in store.pending
    ]
    assert written == [[("simple", 1)], [(GROUP, 10)], [("simple", 2)]]
    store.store_one()
    store.store_one()
    await _settle()
    assert [c for c, _ in _answers(sink.writes)] == [1, 2]  # the third waits for its write
    store.store_one()
    await _settle()
    assert [c for c, _ in _answers(sink.writes)] == [1, 2, 3]


async def test_lane_commits_are_counted_as_the_general_path_counts_them() -> None:
    runtime, store, epoch = await setup()
    metrics = runtime.metrics = Metrics()
    runtime.event_sinks.append(metrics.on_event)
    (one, _), (two, _) = connect(runtime), connect(runtime)
    one.data_received(encode_request(member_commit(epoch, 0, 10), 9, 1, "c"))
    two.data_received(encode_request(member_commit(epoch, 1, 20), 9, 2, "c"))
    await _settle()
    store.store_one()
    await _settle()
    one.data_received(encode_request(member_commit(epoch, 0, 11), 9, 3, "c"))
    await _settle()
    _, fut = store.pending.pop(0)
    fut.set_exception(OSError("disk full"))
    await _settle()

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(f"group_coordinator_{name}", labels)

    assert sample("requests_total", api="OffsetCommit", version="9") == 3
    assert sample("request_latency_seconds_count", api="OffsetCommit") == 3
    assert sample("errors_total", api="OffsetCommit", error="NOT_COORDINATOR") == 1
    assert sample("offset_commits_total") == 2  # stored ones only
