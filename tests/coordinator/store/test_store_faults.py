"""A failing store (a full or broken disk): the requests that wait for it are answered with
a retriable error code, the cause is logged once per incident and counted, and writes
succeed again by themselves when the store does."""

from __future__ import annotations

import asyncio
import dataclasses

from structlog.testing import capture_logs

from coordinator.cluster.routing import SingleNode
from coordinator.group.config import GroupConfig
from coordinator.group.records import Record
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.handlers.group_admin import DELETION_NOT_STORED
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.store import MemoryStore, Write
from coordinator.store.base import LoadedState
from coordinator.telemetry.metrics import Metrics
from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
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
from protocol.apis.sync_group import SyncGroupRequest
from protocol.errors import ErrorCode
from protocol.frames import decode_request, encode_request
from protocol.schema import Struct


class FailingStore(MemoryStore):
    """Keeps what it stores, for a restart to load; refuses every write while ``failing``."""

    persistent = True

    def __init__(self) -> None:
        super().__init__()
        self.failing = False
        self.records: list[Record] = []

    async def open(self) -> LoadedState:
        return LoadedState(records=list(self.records), security=await self.read_security())

    def write(self, batch: Write) -> asyncio.Future[None]:
        if not self.failing:
            self.records += batch.records
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


def fetch() -> OffsetFetchRequest:
    return OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0])]
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
    """Below v3 the store's retriable error, as before; v3 (Kafka 4.4) is told
    GROUP_DELETION_FAILED and why; the group is kept, and deleted when asked again."""
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
        response = await ask(runtime, DeleteGroupsRequest(groups_names=["g", "unknown"]), 3)
        assert isinstance(response, DeleteGroupsResponse)
        assert [(r.group_id, r.error_code, r.error_message) for r in response.results] == [
            ("g", ErrorCode.GROUP_DELETION_FAILED, DELETION_NOT_STORED),
            ("unknown", ErrorCode.GROUP_ID_NOT_FOUND, "The group id does not exist."),
        ]
        store.failing = False
        kept = await ask(runtime, fetch(), 7)
        assert isinstance(kept, OffsetFetchResponse)
        assert [p.committed_offset for t in kept.topics for p in t.partitions] == [1]
        response = await ask(runtime, DeleteGroupsRequest(groups_names=["g"]), 3)
        assert isinstance(response, DeleteGroupsResponse)
        assert [(r.error_code, r.error_message) for r in response.results] == [(0, None)]
    finally:
        runtime.shutdown()


class LeaseLostOnFailure(SingleNode):
    """A cluster node's routing whose lease runs out with the write that fails."""

    clustered = True

    def __init__(self) -> None:
        self.lost = False

    def refusal(self, group_id: str, now_ms: int) -> ErrorCode | None:
        return ErrorCode.NOT_COORDINATOR if self.lost else None


async def test_a_deletion_lost_with_the_lease_sends_the_client_to_the_new_coordinator() -> None:
    """A node whose lease ran out does not say GROUP_DELETION_FAILED: the group is not its
    own any more, and a v3 client is told so (NOT_COORDINATOR), to find its coordinator."""
    store = FailingStore()
    runtime = Runtime(Settings(topics=(("orders", 1),)), asyncio.get_running_loop(), store)
    await runtime.load()
    routing = LeaseLostOnFailure()
    try:
        await ask(runtime, commit(1), 8)
        runtime.node.routing = routing
        store.failing = True
        routing.lost = False  # admitted; the lease runs out while the write fails
        reply = runtime.handle(
            decode_request(encode_request(DeleteGroupsRequest(groups_names=["g"]), 3, 1, "t")[4:]),
            ConnectionContext(client_host="/127.0.0.1"),
        )
        routing.lost = True
        response = await reply if isinstance(reply, asyncio.Future) else reply
        assert isinstance(response, DeleteGroupsResponse)
        assert [(r.error_code, r.error_message) for r in response.results] == [
            (ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        ]
    finally:
        runtime.shutdown()


def join(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


async def joined(runtime: Runtime, *member_ids: str) -> list[JoinGroupResponse]:
    """JoinGroup v3 (no member id round trip) for each member, concurrently."""
    answers = await asyncio.gather(*(ask(runtime, join(m), 3) for m in member_ids))
    assert all(isinstance(a, JoinGroupResponse) for a in answers)
    return answers  # type: ignore[return-value]


async def test_a_generation_that_cannot_be_stored_is_never_seen_nor_loaded() -> None:
    """Issue 22's trial: A and B are Stable at generation 1 when the disk fills; C joins,
    A and B rejoin, and generation 2 cannot be written. Nobody is told generation 2; A and
    B carry on in generation 1, which is also what a restart loads."""
    store = FailingStore()
    settings = Settings(group=GroupConfig(initial_rebalance_delay_ms=50))
    runtime = Runtime(settings, asyncio.get_running_loop(), store)
    await runtime.load()
    seen: list[int] = []
    try:
        first = await joined(runtime, "", "")
        seen += [r.generation_id for r in first if r.error_code == ErrorCode.NONE]
        a, b = (r.member_id for r in sorted(first, key=lambda r: r.member_id != r.leader))
        sync = SyncGroupRequest(group_id="g", generation_id=1, member_id=b, assignments=[])
        lead = dataclasses.replace(sync, member_id=a)
        await asyncio.gather(ask(runtime, lead, 3), ask(runtime, sync, 3))
        store.failing = True
        second = await joined(runtime, "", a, b)
        assert [r.error_code for r in second] == [ErrorCode.NOT_COORDINATOR] * 3
        store.failing = False
        (retry,) = await joined(runtime, b)
        assert (retry.error_code, retry.generation_id) == (ErrorCode.NONE, 1)
        seen += [r.generation_id for r in [*second, retry] if r.error_code == ErrorCode.NONE]
    finally:
        runtime.shutdown()
    assert max(seen) == 1
    restarted = Runtime(settings, asyncio.get_running_loop(), store)
    await restarted.load()
    try:
        assert restarted.groups.groups["g"].generation_id == 1
    finally:
        restarted.shutdown()


async def test_a_commit_that_was_not_stored_is_never_fetched() -> None:
    """kafka-python's trial: commit(20) failed, yet ``committed()`` said 20 until a restart
    said 10. Now it says 10 throughout."""
    store = FailingStore()
    runtime = Runtime(Settings(topics=(("orders", 1),)), asyncio.get_running_loop(), store)
    await runtime.load()
    try:
        assert errors(await ask(runtime, commit(10), 8)) == [ErrorCode.NONE]
        store.failing = True
        assert errors(await ask(runtime, commit(20), 8)) == [ErrorCode.NOT_COORDINATOR]
        store.failing = False
        fetch = OffsetFetchRequest(
            group_id="g", topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0])]
        )
        for version, stable in ((1, False), (7, False), (7, True)):
            asked = dataclasses.replace(fetch, require_stable=stable)
            answer = await ask(runtime, asked, version)
            assert isinstance(answer, OffsetFetchResponse)
            assert answer.topics[0].partitions[0].committed_offset == 10
    finally:
        runtime.shutdown()
