"""An asyncio member of a classic group, of any protocol type (Kafka's AbstractCoordinator).

    async with GroupMember("127.0.0.1:9092", "g", "consumer", ["range"], topics=["t"]) as m:
        m.assignment  # {topic: [partitions]} once the first rebalance completed

Per member there are two asyncio tasks and no threads: ``_run`` (FindCoordinator, JoinGroup
with the MEMBER_ID_REQUIRED second step, the leader's assignment, SyncGroup, and rejoining
whenever asked to) and ``_heartbeat`` (one Heartbeat per interval while in the group). Join
and Sync go over an exclusive connection leased from the ``ConnectionPool`` for the round;
everything else over the pool's shared connection (see ``pool`` for why).

Reactions follow Kafka's consumer: REBALANCE_IN_PROGRESS -> rejoin; ILLEGAL_GENERATION ->
reset the generation and rejoin; UNKNOWN_MEMBER_ID -> also forget the member id; coordinator
errors -> look it up again; FENCED_INSTANCE_ID and other non-retriable errors -> the member
stops with a FatalGroupError. Closing sends LeaveGroup for dynamic members only.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse
from protocol.consumer import CONSUMER_PROTOCOL_TYPE
from protocol.errors import ErrorCode

from .consumer_member import ConsumerGroupMember
from .consumer_role import ConsumerRole, PartitionsCallback
from .errors import FatalGroupError, KafkaClientError
from .metadata import partition_counts
from .offsets import GroupIdentity, OffsetAndMetadata, commit_offsets, fetch_offsets
from .pool import Address, BrokerConnection, ConnectionPool, parse_bootstrap

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

_COORDINATOR_ERRORS = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
_RETRY_ERRORS = {
    *_COORDINATOR_ERRORS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
}
#: Consecutive failed rounds (transport errors, coordinator moves) before the member gives up.
MAX_CONSECUTIVE_FAILURES = 20
#: Consecutive rounds without an assignment (rebalance storms included) before it gives up.
MAX_ROUNDS_WITHOUT_ASSIGNMENT = 1000
#: MEMBER_ID_REQUIRED answers in one round: one is expected, more means a misbehaving server.
MAX_MEMBER_ID_REQUIRED = 3
#: Kafka's group.protocol: the classic protocol (JoinGroup/SyncGroup) or KIP-848's.
GROUP_PROTOCOLS = ("classic", "consumer")


class MemberState(Enum):
    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing-rebalance"
    COMPLETING_REBALANCE = "completing-rebalance"
    STABLE = "stable"


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class LeaderContext:
    """What a leader of a non-consumer group assigns from."""

    group_id: str
    generation_id: int
    protocol_name: str
    members: tuple[JoinedMember, ...]


AssignCallable = Callable[[LeaderContext], Mapping[str, bytes] | Awaitable[Mapping[str, bytes]]]
AssignmentCallback = Callable[[bytes], Awaitable[Any] | Any]


class _Rejoin(Exception):
    """End this round and join again (after a backoff if ``backoff``)."""

    def __init__(self, reason: str, backoff: bool = False) -> None:
        super().__init__(reason)
        self.backoff = backoff


class GroupMember:
    def __new__(cls, *args: Any, group_protocol: str = "classic", **kwargs: Any) -> Any:
        """``group_protocol="consumer"`` (Kafka's ``group.protocol``): a member of a KIP-848
        consumer group instead, a ``ConsumerGroupMember`` made from the same options."""
        if group_protocol not in GROUP_PROTOCOLS:
            raise ValueError(f"group_protocol must be one of {GROUP_PROTOCOLS}")
        if group_protocol == "consumer" and cls is GroupMember:
            return _consumer_group_member(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        bootstrap: str | Sequence[str],
        group_id: str,
        protocol_type: str = CONSUMER_PROTOCOL_TYPE,
        protocols: Sequence[str] | Sequence[tuple[str, bytes]] = ("range",),
        *,
        group_protocol: str = "classic",
        topics: Sequence[str] = (),
        assign: AssignCallable | None = None,
        group_instance_id: str | None = None,
        rack_id: str | None = None,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        on_partitions_revoked: PartitionsCallback | None = None,
        on_partitions_assigned: PartitionsCallback | None = None,
        on_partitions_lost: PartitionsCallback | None = None,
        on_assignment: AssignmentCallback | None = None,
        pool: ConnectionPool | None = None,
        client_id: str = "group-coordinator-client",
    ) -> None:
        self.bootstrap: list[Address] = parse_bootstrap(bootstrap)
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.request_timeout_s = request_timeout_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self._owns_pool = pool is None
        self.pool = pool or ConnectionPool(client_id=client_id)
        self.role: ConsumerRole | None = None
        self._static_protocols: list[tuple[str, bytes]] = []
        if protocol_type == CONSUMER_PROTOCOL_TYPE and all(isinstance(p, str) for p in protocols):
            self.role = ConsumerRole(
                [str(p) for p in protocols],
                topics,
                rack_id=rack_id,
                on_partitions_revoked=on_partitions_revoked,
                on_partitions_assigned=on_partitions_assigned,
                on_partitions_lost=on_partitions_lost,
            )
        else:
            if any(isinstance(p, str) for p in protocols) or assign is None:
                raise ValueError("other protocol types need (name, metadata) protocols and assign")
            self._static_protocols = [
                (str(p[0]), bytes(p[1])) for p in protocols if not isinstance(p, str)
            ]
        self._assign = assign
        self._on_assignment = on_assignment

        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.state = MemberState.UNJOINED
        self.assignment_bytes = b""
        self.rebalances = 0  # completed SyncGroups
        self.error: BaseException | None = None
        self._rejoin = asyncio.Event()
        self._stable = asyncio.Event()
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []

    # -- what applications call ----------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    @property
    def assignment(self) -> dict[str, list[int]]:
        """The partitions this member owns (consumer protocol type)."""
        if self.role is None:
            return {}
        out: dict[str, list[int]] = {}
        for topic, p in sorted(self.role.owned):
            out.setdefault(topic, []).append(p)
        return out

    async def __aenter__(self) -> GroupMember:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, timeout_s: float | None = 60.0) -> None:
        """Start the member's tasks and wait (up to ``timeout_s``; None: not at all) until it
        completes its first rebalance."""
        if not self._tasks:
            self._rejoin.set()
            self._tasks = [
                asyncio.create_task(self._run(), name=f"member-{self.group_id}"),
                asyncio.create_task(self._heartbeat(), name=f"heartbeat-{self.group_id}"),
            ]
        if timeout_s is not None:
            await self.wait_stable(timeout_s)

    async def wait_stable(self, timeout_s: float) -> None:
        """Wait until the member holds an assignment for the current generation."""
        stable = asyncio.create_task(self._stable.wait())
        failed = self._tasks[0] if self._tasks else None
        waiting: set[asyncio.Future[Any]] = {stable} | ({failed} if failed else set())
        try:
            done, _ = await asyncio.wait(
                waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stable.cancel()
        if self.error is not None:
            raise self.error
        if stable not in done:
            raise TimeoutError(f"member of {self.group_id} not stable after {timeout_s}s")

    def request_rejoin(self, reason: str = "requested") -> None:
        log.debug("rejoin %s: %s", self.group_id, reason)
        self._stable.clear()
        self._rejoin.set()

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> None:
        """Commit offsets as this member (generation and member id are checked by the
        coordinator); errors that mean the member left the group trigger a rejoin."""
        who = GroupIdentity(
            self.group_id, self.generation_id, self.member_id, self.group_instance_id
        )
        try:
            conn = await self._coordinator_connection()
            await commit_offsets(conn, who, offsets, timeout=self.request_timeout_s)
        except KafkaClientError as exc:
            if exc.code is not None:
                self._react(exc.code, self.generation_id)
            else:  # the coordinator is unreachable (gone): look it up again next time
                self.pool.forget_coordinator(self.group_id)
            raise

    async def fetch_offsets(
        self, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of the group (all of them when ``partitions`` is None)."""
        conn = await self._coordinator_connection()
        return await fetch_offsets(conn, self.group_id, partitions, timeout=self.request_timeout_s)

    async def close(self, leave: bool = True) -> None:
        """Stop; a dynamic member with a valid membership leaves the group (like Kafka,
        static members do not: their partitions wait for them until the session expires)."""
        if self._closing:
            return
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        try:
            if self.role is not None:
                await self.role.prepare_leave(self.generation_id >= 0)
            if leave and self.group_instance_id is None and self.member_id:
                with contextlib.suppress(KafkaClientError, OSError, TimeoutError):
                    await self._leave_group()
        finally:
            self.state = MemberState.UNJOINED
            if self._owns_pool:
                await self.pool.close()

    # -- the member's task -------------------------------------------------------------------

    async def _run(self) -> None:
        failures = rounds = 0
        try:
            while not self._closing:
                await self._rejoin.wait()
                rounds += 1
                try:
                    await self._join_round()
                    failures = rounds = 0
                except _Rejoin as again:
                    self._rejoin.set()
                    if again.backoff:
                        failures += 1
                        await asyncio.sleep(self.retry_backoff_s * min(failures, 10))
                except (KafkaClientError, OSError, TimeoutError) as exc:
                    if isinstance(exc, FatalGroupError):
                        raise
                    failures += 1
                    log.debug("join round failed (%s): %s", failures, exc)
                    self.pool.forget_coordinator(self.group_id)
                    self._rejoin.set()
                    await asyncio.sleep(self.retry_backoff_s * min(failures, 10))
                if failures >= MAX_CONSECUTIVE_FAILURES or rounds >= MAX_ROUNDS_WITHOUT_ASSIGNMENT:
                    raise KafkaClientError(f"gave up after {rounds} rounds without assignment")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.error = exc
            self.state = MemberState.UNJOINED
            log.warning("member of %s stopped: %s", self.group_id, exc)

    async def _coordinator(self, refresh: bool = False) -> Address:
        return await self.pool.find_coordinator(self.group_id, self.bootstrap, refresh=refresh)

    async def _coordinator_connection(self) -> BrokerConnection:
        return await self.pool.shared(await self._coordinator())

    async def _join_round(self) -> None:
        self._rejoin.clear()
        self._stable.clear()
        if self.role is not None:
            await self.role.prepare_join(self.generation_id >= 0)
        coordinator = await self._coordinator()
        self.state = MemberState.PREPARING_REBALANCE
        async with self.pool.exclusive(coordinator) as conn:
            joined = await self._join_group(conn)
            self.state = MemberState.COMPLETING_REBALANCE
            assignments: Mapping[str, bytes] = {}
            if self.is_leader and not joined.skip_assignment:
                assignments = await self._leader_assignments(joined)
            data = await self._sync_group(conn, assignments)
        self.assignment_bytes = data
        self.rebalances += 1
        rejoin = False
        if self.role is not None:
            rejoin = await self.role.complete(data, self.generation_id)
        if self._on_assignment is not None:
            result = self._on_assignment(data)
            if inspect.isawaitable(result):
                await result
        self.state = MemberState.STABLE
        if rejoin:
            self.request_rejoin("partitions revoked (cooperative)")
        elif not self._rejoin.is_set():
            self._stable.set()

    def _protocols(self) -> list[tuple[str, bytes]]:
        if self.role is not None:
            return self.role.protocols(self.generation_id)
        return self._static_protocols

    async def _join_group(self, conn: BrokerConnection) -> JoinGroupResponse:
        version = conn.versions.pick(JoinGroupRequest)
        # Kafka waits rebalance timeout + 5 s for a JoinGroup answer.
        timeout = max(self.request_timeout_s, self.rebalance_timeout_ms / 1000 + 5)
        protocols = [JoinGroupRequestProtocol(name=n, metadata=m) for n, m in self._protocols()]
        for _ in range(MAX_MEMBER_ID_REQUIRED + 1):
            body = JoinGroupRequest(
                group_id=self.group_id,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.group_instance_id if version >= 5 else None,
                protocol_type=self.protocol_type,
                protocols=protocols,
                reason="joining" if self.generation_id < 0 else "rejoining",
            )
            resp = await conn.call(body, version, timeout=timeout)
            assert isinstance(resp, JoinGroupResponse)
            code = ErrorCode(resp.error_code)
            if code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: join again with this id
                self.member_id = resp.member_id
                continue
            if code != ErrorCode.NONE:
                self._raise_for(code, "JoinGroup")
            self.member_id = resp.member_id
            self.generation_id = resp.generation_id
            self.protocol_name = resp.protocol_name
            self.leader_id = resp.leader
            return resp
        raise _Rejoin("MEMBER_ID_REQUIRED repeated", backoff=True)

    async def _leader_assignments(self, joined: JoinGroupResponse) -> Mapping[str, bytes]:
        protocol = joined.protocol_name or ""
        if self.role is not None:
            topics = self.role.subscribed_topics(joined.members)
            conn = await self.pool.bootstrap(self.bootstrap)
            counts = await partition_counts(conn, topics, timeout=self.request_timeout_s)
            return self.role.assign(protocol, joined.members, counts)
        assert self._assign is not None
        context = LeaderContext(
            group_id=self.group_id,
            generation_id=self.generation_id,
            protocol_name=protocol,
            members=tuple(
                JoinedMember(m.member_id, m.group_instance_id, m.metadata) for m in joined.members
            ),
        )
        result = self._assign(context)
        if inspect.isawaitable(result):
            result = await result
        return dict(result)

    async def _sync_group(self, conn: BrokerConnection, assignments: Mapping[str, bytes]) -> bytes:
        version = conn.versions.pick(SyncGroupRequest)
        body = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation_id,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id if version >= 3 else None,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in assignments.items()
            ],
        )
        timeout = max(self.request_timeout_s, self.rebalance_timeout_ms / 1000 + 5)
        resp = await conn.call(body, version, timeout=timeout)
        assert isinstance(resp, SyncGroupResponse)
        if resp.error_code != ErrorCode.NONE:
            self._raise_for(ErrorCode(resp.error_code), "SyncGroup")
        return bytes(resp.assignment)

    # -- errors --------------------------------------------------------------------------------

    def _reset_generation(self, forget_member_id: bool) -> None:
        self.generation_id = -1
        self.leader_id = ""
        if forget_member_id:
            self.member_id = ""

    def _react(self, code: ErrorCode, generation_id: int) -> bool:
        """Apply what an error means for the membership; True if it calls for a rejoin.
        Errors about an older generation than the current one are stale and ignored."""
        if generation_id != self.generation_id:
            return False
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.request_rejoin("rebalance in progress")
        elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            self._reset_generation(code == ErrorCode.UNKNOWN_MEMBER_ID)
            self.request_rejoin(code.name)
        elif code in _COORDINATOR_ERRORS:
            self.pool.forget_coordinator(self.group_id)
            return False
        else:
            return False
        return True

    def _raise_for(self, code: ErrorCode, what: str) -> None:
        if code in _RETRY_ERRORS:
            self._react(code, self.generation_id)
            raise _Rejoin(f"{what}: {code.name}", backoff=code not in _REJOIN_AT_ONCE)
        raise FatalGroupError.of(code, f"{what} in group {self.group_id}")

    # -- heartbeats and leaving ----------------------------------------------------------------

    async def _heartbeat(self) -> None:
        """Heartbeat while the member holds a generation (also while its SyncGroup waits, as
        Kafka's heartbeat thread does). Bounded by the member's lifetime."""
        while not self._closing:
            await asyncio.sleep(self.heartbeat_interval_s)
            if self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                continue
            generation = self.generation_id
            try:
                conn = await self._coordinator_connection()
                version = conn.versions.pick(HeartbeatRequest)
                body = HeartbeatRequest(
                    group_id=self.group_id,
                    generation_id=generation,
                    member_id=self.member_id,
                    group_instance_id=self.group_instance_id if version >= 3 else None,
                )
                resp = await conn.call(body, version, timeout=self.request_timeout_s)
            except (KafkaClientError, OSError, TimeoutError) as exc:
                log.debug("heartbeat failed: %s", exc)
                # Kafka marks the coordinator dead on a failed request: the next heartbeat
                # looks it up again (it may have moved to another node).
                self.pool.forget_coordinator(self.group_id)
                continue
            assert isinstance(resp, HeartbeatResponse)
            code = ErrorCode(resp.error_code)
            if code == ErrorCode.NONE:
                continue
            if code == ErrorCode.REBALANCE_IN_PROGRESS and self.state != MemberState.STABLE:
                continue  # the SyncGroup in flight will say so too
            if code in _RETRY_ERRORS:
                self._react(code, generation)
            else:
                self.error = FatalGroupError.of(code, f"Heartbeat in group {self.group_id}")
                self.state = MemberState.UNJOINED
                for task in self._tasks:
                    if task is not asyncio.current_task():
                        task.cancel()
                return

    async def _leave_group(self) -> None:
        conn = await self._coordinator_connection()
        version = conn.versions.pick(LeaveGroupRequest)
        if version >= 3:
            body = LeaveGroupRequest(
                group_id=self.group_id,
                members=[
                    LeaveGroupRequestMemberIdentity(
                        member_id=self.member_id, reason="the consumer is being closed"
                    )
                ],
            )
        else:
            body = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
        await conn.call(body, version, timeout=self.request_timeout_s)
        self._reset_generation(forget_member_id=True)


#: Retriable errors after which rejoining immediately is right (no backoff).
_REJOIN_AT_ONCE = {
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
}


#: GroupMember options the consumer group protocol has no use for: the coordinator assigns
#: and sets the session timeout and heartbeat interval (group.consumer.* settings).
_CLASSIC_ONLY = (
    "protocols",
    "assign",
    "on_assignment",
    "session_timeout_ms",
    "heartbeat_interval_ms",
)


def _consumer_group_member(
    bootstrap: str | Sequence[str],
    group_id: str,
    protocol_type: str = CONSUMER_PROTOCOL_TYPE,
    *args: Any,
    topics: Sequence[str] = (),
    group_instance_id: str | None = None,
    rebalance_timeout_ms: int = 300000,
    request_timeout_ms: int = 30000,
    on_partitions_revoked: PartitionsCallback | None = None,
    on_partitions_assigned: PartitionsCallback | None = None,
    on_partitions_lost: PartitionsCallback | None = None,
    pool: ConnectionPool | None = None,
    client_id: str = "group-coordinator-client",
    server_assignor: str | None = None,
    regex: str | None = None,
    **classic: Any,
) -> Any:
    """A ConsumerGroupMember from GroupMember's options (callbacks get frozensets here too)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise ValueError("the consumer group protocol serves protocol type 'consumer' only")
    unknown = set(classic) - set(_CLASSIC_ONLY)
    if unknown:
        raise TypeError(f"unexpected options {sorted(unknown)}")

    def as_set(callback: PartitionsCallback | None) -> Any:
        if callback is None:
            return None
        return lambda partitions: callback(frozenset(partitions))

    return ConsumerGroupMember(
        bootstrap,
        group_id,
        topics,
        regex=regex,
        server_assignor=server_assignor,
        instance_id=group_instance_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        on_assigned=as_set(on_partitions_assigned),
        on_revoked=as_set(on_partitions_revoked),
        on_lost=as_set(on_partitions_lost),
        pool=pool,
        request_timeout_s=request_timeout_ms / 1000,
        client_id=client_id,
    )
