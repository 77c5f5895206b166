"""A consumer's side of the classic group protocol, as bare steps for load generation.

Built on the project's own client connection and codecs. Every step is what a Kafka consumer
sends: JoinGroup (again with the given id on MEMBER_ID_REQUIRED, KIP-394), SyncGroup (the
leader with an assignment for every member, followers with none), Heartbeat, LeaveGroup.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.client.pool import ApiVersionTable, negotiate_versions
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
)
from protocol.apis.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode

TOPIC = "bench"
PARTITIONS = 100
SUBSCRIPTION = encode_subscription(ConsumerProtocolSubscription(topics=[TOPIC]))
TIMEOUT_S = 60.0


class StepFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Member:
    group: str
    member_id: str
    generation_id: int
    leader: bool = False


@dataclass
class Wire:
    """A connection and the API versions negotiated with its server."""

    client: KafkaConnectionClient
    versions: ApiVersionTable
    picked: dict[type, int] = field(default_factory=dict)

    async def call(self, body: Any) -> Any:
        kind = type(body)
        version = self.picked.get(kind)
        if version is None:
            version = self.picked[kind] = self.versions.pick(kind)
        fut = self.client.send(body, version)
        # A timer on the response itself: asyncio.wait_for's extra future and callbacks per
        # request were a tenth of the generator's CPU in a 5,000-member rebalance.
        timer = asyncio.get_running_loop().call_later(TIMEOUT_S, _time_out, fut)
        try:
            return await fut
        finally:
            timer.cancel()

    def close(self) -> None:
        self.client.close()


def _time_out(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError(f"no response within {TIMEOUT_S:g} s"))


async def open_wire(port: int, versions: ApiVersionTable | None = None) -> Wire:
    """Connect; negotiate versions unless they are known already for this server."""
    client = await connect("127.0.0.1", port, "bench")
    if versions is None:
        versions = await negotiate_versions(client, TIMEOUT_S)
    return Wire(client, versions)


async def join(
    wire: Wire,
    group: str,
    member_id: str = "",
    session_timeout_ms: int = 60000,
    rebalance_timeout_ms: int = 60000,
) -> JoinGroupResponse:
    for _ in range(3):
        resp = await wire.call(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                member_id=member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)],
            )
        )
        assert isinstance(resp, JoinGroupResponse)
        if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            member_id = resp.member_id
            continue
        if resp.error_code != ErrorCode.NONE:
            raise StepFailed(f"JoinGroup {group}: error {resp.error_code}")
        return resp
    raise StepFailed(f"JoinGroup {group}: MEMBER_ID_REQUIRED repeatedly")


def assign(member_ids: list[str]) -> list[SyncGroupRequestAssignment]:
    """The leader's work: the topic's partitions dealt round-robin over the members."""
    owned: dict[str, list[int]] = {m: [] for m in member_ids}
    ordered = sorted(member_ids)
    for p in range(PARTITIONS):
        owned[ordered[p % len(ordered)]].append(p)
    return [
        SyncGroupRequestAssignment(
            member_id=m,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(
                    assigned_partitions=[TopicPartition(topic=TOPIC, partitions=owned[m])]
                )
            ),
        )
        for m in member_ids
    ]


async def sync(wire: Wire, joined: JoinGroupResponse, group: str) -> tuple[int, Member]:
    """SyncGroup after ``joined``; returns the error code and the member it made."""
    is_leader = joined.leader == joined.member_id
    assignments = assign([m.member_id for m in joined.members]) if is_leader else []
    resp = await wire.call(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            protocol_type="consumer",
            protocol_name=joined.protocol_name,
            assignments=assignments,
        )
    )
    assert isinstance(resp, SyncGroupResponse)
    return int(resp.error_code), Member(group, joined.member_id, joined.generation_id, is_leader)


class Convergence:
    """Tracks a group's members inside one generator until all N have synced one generation.

    Members that synced an older generation learn of the newer one as a consumer does, from
    a Heartbeat (REBALANCE_IN_PROGRESS), but they send it as soon as any member of this
    generator has seen a newer generation (or was told of a rebalance), not after a 3 s
    heartbeat interval: what is measured is the server, not the clients' timers.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.synced: dict[int, int] = {}
        self.done = asyncio.Event()
        self.newest = -1
        #: What members waiting for news await together: resolved by a poke, by
        #: convergence, or by its own timer (two tasks and a wait per waiting member cost
        #: the generator as much CPU as the server spent answering their SyncGroups).
        self._news: asyncio.Future[None] | None = None
        self.members: dict[str, tuple[Wire, Member]] = {}

    def saw_generation(self, generation_id: int) -> None:
        if generation_id > self.newest:
            self.newest = generation_id
            self.poke()

    def poke(self) -> None:
        news, self._news = self._news, None
        if news is not None and not news.done():
            news.set_result(None)

    def add_synced(self, wire: Wire, member: Member) -> None:
        self.members[member.member_id] = (wire, member)
        count = self.synced.get(member.generation_id, 0) + 1
        self.synced[member.generation_id] = count
        if count == self.n:
            self.done.set()
            self.poke()

    async def wait_news(self, timeout: float) -> None:
        """Until a poke or convergence, or at most ``timeout`` (shared by the members
        waiting at the same time: the first of them to wait arms it)."""
        if self.done.is_set():
            return
        news = self._news
        if news is None:
            loop = asyncio.get_running_loop()
            news = self._news = loop.create_future()
            loop.call_later(timeout, _news_timer, self, news)
        await news


def _news_timer(conv: Convergence, news: asyncio.Future[None]) -> None:
    if conv._news is news:
        conv.poke()


async def member_loop(
    wire: Wire,
    group: str,
    conv: Convergence,
    member: Member | None = None,
    *,
    session_timeout_ms: int = 60000,
    rebalance_timeout_ms: int = 60000,
) -> None:
    """One consumer until the group has converged: (re)join and sync; while synced,
    heartbeat when there is news (or every 100 ms) and rejoin when told to. ``member``:
    start as that already synced member, with a Heartbeat at once."""
    member_id = member.member_id if member is not None else ""
    news = member is not None
    timeouts = {
        "session_timeout_ms": session_timeout_ms,
        "rebalance_timeout_ms": rebalance_timeout_ms,
    }
    while not conv.done.is_set():
        if member is None:
            joined = await join(wire, group, member_id, **timeouts)
            member_id = joined.member_id
            conv.saw_generation(joined.generation_id)
            code, synced = await sync(wire, joined, group)
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                conv.poke()
                continue
            if code != ErrorCode.NONE:
                raise StepFailed(f"SyncGroup {group}: error {code}")
            member = synced
            conv.add_synced(wire, member)
            news = False
        while not conv.done.is_set():
            if not news and conv.newest <= member.generation_id:
                await conv.wait_news(0.1)
                if conv.done.is_set():
                    return
            news = False
            code = await heartbeat(wire, member)
            if code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
                member = None
                break
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                member, member_id = None, ""
                break
            if code != ErrorCode.NONE:
                raise StepFailed(f"Heartbeat {group}: error {code}")
            await conv.wait_news(0.1)


async def join_and_sync(wire: Wire, group: str, member_id: str = "", **timeouts: int) -> Member:
    """Join and sync a group this member joins alone."""
    joined = await join(wire, group, member_id, **timeouts)
    code, member = await sync(wire, joined, group)
    if code != ErrorCode.NONE:
        raise StepFailed(f"SyncGroup {group}: error {code}")
    return member


async def form_group(
    wires: list[Wire],
    group: str,
    *,
    session_timeout_ms: int = 60000,
    rebalance_timeout_ms: int = 60000,
) -> list[tuple[Wire, Member]]:
    """Every wire joins ``group`` at once (one member each); returns (wire, member) pairs
    once all N have synced one generation."""
    conv = Convergence(len(wires))
    await asyncio.gather(
        *(
            member_loop(
                w,
                group,
                conv,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
            )
            for w in wires
        )
    )
    newest = max(g for g, count in conv.synced.items() if count == conv.n)
    return [(w, m) for w, m in conv.members.values() if m.generation_id == newest]


async def heartbeat(wire: Wire, member: Member) -> int:
    resp = await wire.call(
        HeartbeatRequest(
            group_id=member.group, generation_id=member.generation_id, member_id=member.member_id
        )
    )
    return int(resp.error_code)


async def leave(wire: Wire, member: Member) -> None:
    if wire.versions.pick(LeaveGroupRequest) >= 3:
        body = LeaveGroupRequest(
            group_id=member.group,
            members=[LeaveGroupRequestMemberIdentity(member_id=member.member_id)],
        )
    else:
        body = LeaveGroupRequest(group_id=member.group, member_id=member.member_id)
    resp = await wire.call(body)
    assert isinstance(resp, LeaveGroupResponse)
    if resp.error_code != ErrorCode.NONE:
        raise StepFailed(f"LeaveGroup {member.group}: error {resp.error_code}")
