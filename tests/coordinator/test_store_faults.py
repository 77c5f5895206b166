"""A failing store (a full or broken disk): the requests that wait for it are answered with
a retriable error code, the cause is logged once per incident and counted, and writes
succeed again by themselves when the store does."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from coordinator.config import Settings
from coordinator.connection_context import ConnectionContext
from coordinator.metrics import Metrics
from coordinator.runtime import Runtime
from coordinator.store import MemoryStore, Write
from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.errors import ErrorCode
from protocol.frames import decode_request, encode_request
from protocol.schema import Struct


class FailingStore(MemoryStore):
    persistent = True

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def write(self, batch: Write) -> asyncio.Future[None]:
        if not self.failing:
            return super().write(batch)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_exception(OSError(28, "database or disk is full"))
        return fut


async def ask(runtime: Runtime, body: Struct, version: int) -> Struct:
    request = decode_request(encode_request(body, version, 1, "test")[4:])
    reply = runtime.handle(request, ConnectionContext(client_host="/127.0.0.1"))
    return await reply if isinstance(reply, asyncio.Future) else reply


def commit(offset: int) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)
    return OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(name="orders", partitions=[partition])],
    )


def errors(response: Struct) -> list[int]:
    assert isinstance(response, OffsetCommitResponse)
    return [p.error_code for t in response.topics for p in t.partitions]


async def test_a_commit_that_cannot_be_stored_is_answered_not_coordinator() -> None:
    store = FailingStore()
    runtime = Runtime(Settings(topics=(("orders", 1),)), asyncio.get_running_loop(), store)
    runtime.metrics = Metrics()
    await runtime.load()
    try:
        assert errors(await ask(runtime, commit(1), 8)) == [ErrorCode.NONE]
        store.failing = True
        with capture_logs() as logs:
            assert errors(await ask(runtime, commit(2), 8)) == [ErrorCode.NOT_COORDINATOR]
            assert errors(await ask(runtime, commit(3), 8)) == [ErrorCode.NOT_COORDINATOR]
            store.failing = False
            assert errors(await ask(runtime, commit(4), 8)) == [ErrorCode.NONE]
        said = [e["event"] for e in logs]
        assert said.count("store write failed") == 1  # once per incident, not per request
        assert said.count("store writes succeed again") == 1
        failures = runtime.metrics.registry.get_sample_value(
            "group_coordinator_store_write_failures_total"
        )
        assert failures == 2
    finally:
        runtime.shutdown()


async def test_a_group_deletion_that_cannot_be_stored_says_so() -> None:
    store = FailingStore()
    runtime = Runtime(Settings(topics=(("orders", 1),)), asyncio.get_running_loop(), store)
    await runtime.load()
    try:
        await ask(runtime, commit(1), 8)  # the group exists (Empty, with an offset)
        store.failing = True
        response = await ask(runtime, DeleteGroupsRequest(groups_names=["g", "unknown"]), 2)
        assert isinstance(response, DeleteGroupsResponse)
        assert [(r.group_id, r.error_code) for r in response.results] == [
            ("g", ErrorCode.NOT_COORDINATOR),
            ("unknown", ErrorCode.GROUP_ID_NOT_FOUND),
        ]
    finally:
        runtime.shutdown()
