"""OffsetCommits pipelined on one connection: a commit waiting for its write does not hold
the commits behind it (their writes go to the store meanwhile, as the writes of commits
on different connections do), yet each is answered only once its write is stored, all in
request order, and any other request behind them waits until they are answered (an
OffsetFetch sees what they committed)."""

from __future__ import annotations

import asyncio
import struct

from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.shell.server import KafkaConnection
from coordinator.store import MemoryStore, Write
from protocol.apis import BY_KEY
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

GROUP = "simple"


class HeldStore(MemoryStore):
    """A durable store whose writes are stored when the test says so, in order."""

    persistent = True

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[tuple[Write, asyncio.Future[None]]] = []

    def write(self, batch: Write) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append((batch, fut))
        return fut

    def store_one(self) -> None:
        _, fut = self.pending.pop(0)
        fut.set_result(None)


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _answers(writes: list[bytes]) -> list[tuple[int, bytes]]:
    stream, out = b"".join(writes), []
    while stream:
        (size, correlation) = struct.unpack_from(">ii", stream)
        out.append((correlation, stream[4 : 4 + size]))
        stream = stream[4 + size :]
    return out


def commit(offset: int, partition: int = 0) -> OffsetCommitRequest:
    # Generation -1: a commit outside group management, kept by a simple group.
    return OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
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


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_pipelined_commits_are_written_together_and_answered_in_order_once_stored() -> None:
    store = HeldStore()
    runtime = Runtime(Settings(store="memory"), asyncio.get_running_loop(), store)
    runtime.catalog.create("orders", 2)
    conn = KafkaConnection(runtime, set())
    sink = Recorder()
    conn.transport = sink  # type: ignore[assignment]
    fetch = OffsetFetchRequest(
        group_id=GROUP, topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0])]
    )
    conn.data_received(
        encode_request(commit(10), 8, 0, "c")
        + encode_request(commit(11), 8, 1, "c")
        + encode_request(commit(5, partition=9), 8, 2, "c")  # no such partition: refused at once
        + encode_request(commit(12), 8, 3, "c")
        + encode_request(fetch, 7, 4, "c")
    )
    await _settle()
    # Every commit went to the store while the first one waits; nothing is answered yet,
    # and the fetch behind them is not even read.
    assert len(store.pending) == 3
    assert sink.writes == []
    store.store_one()
    await _settle()
    assert [c for c, _ in _answers(sink.writes)] == [0]
    store.store_one()
    await _settle()
    # The refused commit waited for the one before it.
    assert [c for c, _ in _answers(sink.writes)] == [0, 1, 2]
    store.store_one()
    await _settle()
    answers = _answers(sink.writes)
    assert [c for c, _ in answers] == [0, 1, 2, 3, 4]
    codes = []
    for _, frame in answers[:4]:
        _, body = decode_response(BY_KEY[8], 8, frame)
        assert isinstance(body, OffsetCommitResponse)
        codes.append(body.topics[0].partitions[0].error_code)
    assert codes == [0, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0]
    _, fetched = decode_response(BY_KEY[9], 7, answers[4][1])
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.topics[0].partitions[0].committed_offset == 12  # the last one stored


async def test_a_failed_write_answers_its_commit_with_an_error_and_the_rest_in_order() -> None:
    store = HeldStore()
    runtime = Runtime(Settings(store="memory"), asyncio.get_running_loop(), store)
    runtime.catalog.create("orders", 2)
    conn = KafkaConnection(runtime, set())
    sink = Recorder()
    conn.transport = sink  # type: ignore[assignment]
    conn.data_received(b"".join(encode_request(commit(i), 8, i, "c") for i in range(3)))
    await _settle()
    assert len(store.pending) == 3
    _, fut = store.pending.pop(0)
    fut.set_exception(OSError("disk full"))
    store.store_one()
    store.store_one()
    await _settle()
    answers = _answers(sink.writes)
    assert [c for c, _ in answers] == [0, 1, 2]
    codes = []
    for _, frame in answers:
        _, body = decode_response(BY_KEY[8], 8, frame)
        assert isinstance(body, OffsetCommitResponse)
        codes.append(body.topics[0].partitions[0].error_code)
    assert codes == [ErrorCode.NOT_COORDINATOR, 0, 0]
    assert not conn.closed
