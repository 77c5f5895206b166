"""An asyncio member of a KIP-848 consumer group (``group.protocol=consumer``).

    async with ConsumerGroupMember("127.0.0.1:9092", "g", topics=["t"]) as m:
        m.assignment  # {topic: [partitions]}, as the coordinator reconciled it

One task heartbeats (ConsumerGroupHeartbeat v1, the member id made here, KIP-1082): the
coordinator computes the assignment; an answer's assignment is applied at once, revoking
what it no longer holds (``on_revoked``) before taking what it adds (``on_assigned``), and
the next heartbeat, sent without waiting for the interval, reports what the member owns
(which is how the coordinator learns that a revocation is done).

Reactions follow Kafka's consumer: FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID lose every
partition and rejoin with epoch 0 (keeping the member id); coordinator errors look it up
again; other errors stop the member with a FatalGroupError. ``close`` leaves with epoch -1
(a static member: -2, to come back to its assignment).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence

from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode

from .errors import FatalGroupError, KafkaClientError
from .offsets import GroupIdentity, OffsetAndMetadata, commit_offsets, fetch_offsets
from .pool import Address, BrokerConnection, ConnectionPool, parse_bootstrap

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Partitions = dict[str, list[int]]
Callback = Callable[[list[TopicPartition]], Awaitable[None] | None]

_COORDINATOR_ERRORS = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}
_REJOIN_ERRORS = {ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID}
#: Consecutive failed heartbeats (transport errors, coordinator moves) before giving up.
MAX_CONSECUTIVE_FAILURES = 20


class ConsumerGroupMember:
    def __init__(
        self,
        bootstrap: str | Sequence[str],
        group_id: str,
        topics: Sequence[str] = (),
        *,
        regex: str | None = None,
        server_assignor: str | None = None,
        instance_id: str | None = None,
        rebalance_timeout_ms: int = 300000,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_lost: Callback | None = None,
        pool: ConnectionPool | None = None,
        request_timeout_s: float = 30.0,
        client_id: str | None = None,
    ) -> None:
        self.bootstrap: list[Address] = parse_bootstrap(bootstrap)
        self.group_id = group_id
        self.topics = list(topics)
        self.regex = regex
        self.server_assignor = server_assignor
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        #: Fenced or unknown: what it owned may already be someone else's. Without this
        #: callback, the revoked one is called (as Kafka's default onPartitionsLost does).
        self.on_lost = on_lost
        self._own_pool = pool is None
        self.pool = pool or (
            ConnectionPool(request_timeout_s=request_timeout_s)
            if client_id is None
            else ConnectionPool(client_id=client_id, request_timeout_s=request_timeout_s)
        )
        self.timeout = request_timeout_s
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.heartbeat_interval_ms = 0
        self._owned: dict[str, set[int]] = {}
        self._names: dict[uuid.UUID, str] = {}  # topic id -> name
        self._assigned_once = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.error: BaseException | None = None

    @property
    def assignment(self) -> Partitions:
        return {t: sorted(ps) for t, ps in sorted(self._owned.items()) if ps}

    async def __aenter__(self) -> ConsumerGroupMember:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, timeout_s: float = 30.0) -> None:
        """Join; returns once the first heartbeat answered (with the member's assignment,
        possibly empty while partitions are still being released)."""
        self._task = asyncio.create_task(self._run())
        waiter = asyncio.create_task(self._assigned_once.wait())
        done, _ = await asyncio.wait(
            {waiter, self._task}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        waiter.cancel()
        if self._task in done:
            raise self.error or FatalGroupError("the member stopped before it joined")
        if not done:
            raise TimeoutError(f"not in group {self.group_id} after {timeout_s} s")

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> None:
        """OffsetCommit at the member's epoch (the coordinator checks it)."""
        who = GroupIdentity(self.group_id, self.member_epoch, self.member_id, self.instance_id)
        await commit_offsets(await self._coordinator(), who, offsets, timeout=self.timeout)

    async def fetch_offsets(
        self, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of the group (all of them when ``partitions`` is None)."""
        conn = await self._coordinator()
        return await fetch_offsets(conn, self.group_id, partitions, timeout=self.timeout)

    async def close(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self.member_epoch > 0 or self._owned:
            leave = -2 if self.instance_id is not None else -1
            with contextlib.suppress(KafkaClientError, OSError, TimeoutError):
                await self._send(self._request(leave_epoch=leave))
        self._owned = {}
        if self._own_pool:
            await self.pool.close()

    # -- the heartbeat loop ----------------------------------------------------------------

    async def _coordinator(self, refresh: bool = False) -> BrokerConnection:
        address = await self.pool.find_coordinator(self.group_id, self.bootstrap, refresh=refresh)
        return await self.pool.shared(address)

    def _request(self, leave_epoch: int | None = None) -> ConsumerGroupHeartbeatRequest:
        if leave_epoch is not None:
            return ConsumerGroupHeartbeatRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                member_epoch=leave_epoch,
                instance_id=self.instance_id,
            )
        owned = [
            ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=topic_id, partitions=sorted(ps))
            for topic_id, name in self._names.items()
            if (ps := self._owned.get(name))
        ]
        joining = self.member_epoch == 0
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
            # A full request when joining; afterwards only what the coordinator needs.
            rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
            subscribed_topic_names=self.topics if joining else None,
            subscribed_topic_regex=(self.regex or "") if joining else None,
            server_assignor=self.server_assignor if joining else None,
            topic_partitions=[] if joining else owned,
        )

    async def _send(self, body: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        conn = await self._coordinator()
        resp = await conn.call(body, timeout=self.timeout)
        assert isinstance(resp, ConsumerGroupHeartbeatResponse)
        return resp

    async def _run(self) -> None:
        failures = 0
        try:
            while not self._stopping:
                try:
                    resp = await self._send(self._request())
                except (KafkaClientError, OSError, TimeoutError) as exc:
                    # No coordinator right now (moving, or the cluster's database away):
                    # retried for as long as it lasts, as Kafka's clients do.
                    lookup = isinstance(exc, KafkaClientError) and exc.code in _COORDINATOR_ERRORS
                    failures += 0 if lookup else 1
                    if failures >= MAX_CONSECUTIVE_FAILURES:
                        raise FatalGroupError(f"ConsumerGroupHeartbeat failed: {exc}") from exc
                    self.pool.forget_coordinator(self.group_id)
                    await asyncio.sleep(0.2)
                    continue
                failures = 0
                code = ErrorCode(resp.error_code)
                if code in _COORDINATOR_ERRORS:
                    self.pool.forget_coordinator(self.group_id)
                    await asyncio.sleep(0.1)
                    continue
                if code in _REJOIN_ERRORS:
                    await self._lose_everything()
                    self.member_epoch = 0
                    continue
                if code != ErrorCode.NONE:
                    raise FatalGroupError(
                        f"ConsumerGroupHeartbeat: {code.name}: {resp.error_message or ''}"
                    )
                self.member_epoch = resp.member_epoch
                self.heartbeat_interval_ms = resp.heartbeat_interval_ms
                moved = False
                if resp.assignment is not None:
                    moved = await self._apply(resp)
                self._assigned_once.set()
                if not moved:  # a change is acknowledged at once, else at the interval
                    await asyncio.sleep(max(self.heartbeat_interval_ms, 50) / 1000)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.error = exc
                log.warning("consumer group member %s stopped: %s", self.member_id, exc)
            raise

    async def _apply(self, resp: ConsumerGroupHeartbeatResponse) -> bool:
        assert resp.assignment is not None
        unknown = [
            tp.topic_id for tp in resp.assignment.topic_partitions if tp.topic_id not in self._names
        ]
        if unknown:
            await self._learn_topic_names()
        new: dict[str, set[int]] = {}
        for tp in resp.assignment.topic_partitions:
            name = self._names.get(tp.topic_id)
            if name is not None:  # a topic without metadata yet: taken on a later answer
                new.setdefault(name, set()).update(tp.partitions)
        revoked = sorted((t, p) for t, ps in self._owned.items() for p in ps - new.get(t, set()))
        added = sorted((t, p) for t, ps in new.items() for p in ps - self._owned.get(t, set()))
        if revoked:
            await _call(self.on_revoked, revoked)
        self._owned = new
        if added:
            await _call(self.on_assigned, added)
        return bool(revoked or added)

    async def _lose_everything(self) -> None:
        lost = sorted((t, p) for t, ps in self._owned.items() for p in ps)
        self._owned = {}
        if lost:
            await _call(self.on_lost or self.on_revoked, lost)

    async def _learn_topic_names(self) -> None:
        """Topic ids to names, from Metadata of every topic (v10+ carries ids)."""
        conn = await self.pool.bootstrap(self.bootstrap)
        resp = await conn.call(MetadataRequest(topics=None), timeout=self.timeout)
        assert isinstance(resp, MetadataResponse)
        for t in resp.topics:
            if t.error_code == ErrorCode.NONE and t.name is not None and t.topic_id.int:
                self._names[t.topic_id] = t.name


async def _call(callback: Callback | None, partitions: list[TopicPartition]) -> None:
    if callback is None:
        return
    result = callback(partitions)
    if inspect.isawaitable(result):
        await result
