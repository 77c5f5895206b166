"""A consumer's side of the classic group protocol, as bare steps for load generation.

Built on the project's own client connection and codecs. Every step is what a Kafka consumer
sends: JoinGroup (again with the given id on MEMBER_ID_REQUIRED, KIP-394), SyncGroup (the
leader with an assignment for every member, followers with none), Heartbeat, LeaveGroup.

``form_group`` and ``rejoin_group`` (the rebalance benchmark's measured part) drive all
members from callbacks, with request frames built from templates and only the needed
fields of responses read: the same bytes as the general client sends, at a fraction of
its CPU (see ``_Formation``).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from coordinator.client.connection import ConnectionClosed, KafkaConnectionClient
from coordinator.client.pool import ApiVersionTable, negotiate_versions
from protocol.apis import BY_KEY
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
from protocol.frames import decode_response, encode_request
from protocol.primitives import read_uvarint_tail, uvarint_bytes
from protocol.schema import Struct

TOPIC = "bench"
PARTITIONS = 100
SUBSCRIPTION = encode_subscription(ConsumerProtocolSubscription(topics=[TOPIC]))
TIMEOUT_S = 60.0
CLIENT_ID = "bench"


class StepFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Member:
    group: str
    member_id: str
    generation_id: int
    leader: bool = False


_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_FRAME_START = struct.Struct(">i4si")  # size, api key and version, correlation id


class LeanClient(KafkaConnectionClient):
    """The project's client, with a second path for the group formation's steps: while
    ``on_frame`` is set, each response frame goes to it as bytes (no future, no decoding,
    no timer), and requests are frames written as they are."""

    def __init__(self) -> None:
        super().__init__(CLIENT_ID)
        self.on_frame: Callable[[bytes], None] | None = None
        self.on_lost: Callable[[Exception], None] | None = None

    def data_received(self, data: bytes) -> None:
        if self.on_frame is None:
            super().data_received(data)
            return
        splitter = self._splitter
        # A read is one whole frame nearly always (one request outstanding at a time).
        if (
            not splitter.buffered
            and len(data) >= 4
            and _INT32.unpack_from(data)[0] == len(data) - 4
        ):
            self.on_frame(data[4:])
            return
        for frame in splitter.feed(data):
            if self.on_frame is not None:  # (only the formation's requests are outstanding)
                self.on_frame(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.on_lost is not None:
            self.on_lost(ConnectionClosed("connection closed"))

    def next_correlation(self) -> int:
        """The correlation id of the next request (one sequence with the general path)."""
        return next(self._correlation)

    def write(self, frame: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionClosed("connection closed")
        self.transport.write(frame)


@dataclass
class Wire:
    """A connection and the API versions negotiated with its server."""

    client: LeanClient
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
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(LeanClient, "127.0.0.1", port)
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
    # Most members own the same partitions (none, with more members than partitions):
    # each distinct list is encoded once, which the leader's SyncGroup waits for.
    encoded: dict[tuple[int, ...], bytes] = {}
    assignments = []
    for m in member_ids:
        partitions = tuple(owned[m])
        assignment = encoded.get(partitions)
        if assignment is None:
            assignment = encoded[partitions] = encode_assignment(
                ConsumerProtocolAssignment(
                    assigned_partitions=[TopicPartition(topic=TOPIC, partitions=owned[m])]
                )
            )
        assignments.append(SyncGroupRequestAssignment(member_id=m, assignment=assignment))
    return assignments


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


def _string(value: str, flexible: bool) -> bytes:
    """A non-null string as the request's version writes it."""
    raw = value.encode()
    return (uvarint_bytes(len(raw) + 1) if flexible else _INT16.pack(len(raw))) + raw


def _uvarint(buf: bytes, o: int) -> tuple[int, int]:
    b = buf[o]
    return (b, o + 1) if b < 0x80 else read_uvarint_tail(buf, o + 1, b)


def _read_string(buf: bytes, o: int, flexible: bool) -> tuple[str | None, int]:
    if flexible:
        n, o = _uvarint(buf, o)
        n -= 1
    else:
        (n,) = _INT16.unpack_from(buf, o)
        o += 2
    if n < 0:
        return None, o
    return buf[o : o + n].decode(), o + n


def _body_at(frame: bytes, flexible: bool) -> int:
    """Where a response's body starts: after the correlation id and, in flexible
    versions, the header's tagged fields."""
    if not flexible:
        return 4
    count, o = _uvarint(frame, 4)
    for _ in range(count):
        _, o = _uvarint(frame, o)
        size, o = _uvarint(frame, o)
        o += size
    return o


#: Stand-ins encoded in a template's request and cut out of its frame again.
_MEMBER_MARK = "\x7fmember-id-of-the-template\x7f"
_GENERATION_MARK = 0x5EEDFACE >> 1


@dataclass(frozen=True)
class _Template:
    """A request frame with a hole: the member id (and the generation before it, for
    SyncGroup and Heartbeat), all its other bytes encoded once."""

    key_version: bytes
    head: bytes  # from after the correlation id to the hole
    tail: bytes
    flexible: bool

    @classmethod
    def of(
        cls, make: Callable[[int, str], Struct], version: int, with_generation: bool
    ) -> _Template:
        body = make(_GENERATION_MARK, _MEMBER_MARK)
        assert body.kafka is not None and body.kafka.api_key is not None
        flexible = BY_KEY[body.kafka.api_key].is_flexible(version)
        frame = encode_request(body, version, 0, CLIENT_ID)
        hole = _string(_MEMBER_MARK, flexible)
        if with_generation:
            hole = _INT32.pack(_GENERATION_MARK) + hole
        at = frame.index(hole)
        assert frame.count(hole) == 1
        return cls(frame[4:8], frame[12:at], frame[at + len(hole) :], flexible)

    def frame(self, correlation_id: int, middle: bytes) -> bytes:
        size = 8 + len(self.head) + len(middle) + len(self.tail)
        start = _FRAME_START.pack(size, self.key_version, correlation_id)
        return b"".join((start, self.head, middle, self.tail))


class _Frames:
    """The requests of one group's members, and where their responses' fields are."""

    def __init__(
        self,
        group: str,
        versions: ApiVersionTable,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
    ) -> None:
        self.group = group
        self.join_version = versions.pick(JoinGroupRequest)
        self.sync_version = versions.pick(SyncGroupRequest)
        self.heartbeat_version = versions.pick(HeartbeatRequest)
        self.join = _Template.of(
            lambda _, member_id: JoinGroupRequest(
                group_id=group,
                member_id=member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)],
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
            ),
            self.join_version,
            False,
        )
        self.join_flexible = BY_KEY[11].is_flexible(self.join_version)
        self.sync_flexible = BY_KEY[14].is_flexible(self.sync_version)
        self.heartbeat_flexible = BY_KEY[12].is_flexible(self.heartbeat_version)
        self.heartbeat = _Template.of(
            lambda generation, member_id: HeartbeatRequest(
                group_id=group, generation_id=generation, member_id=member_id
            ),
            self.heartbeat_version,
            True,
        )
        self._syncs: dict[str | None, _Template] = {}

    def sync(self, protocol_name: str | None) -> _Template:
        """A follower's SyncGroup (no assignments) naming ``protocol_name``."""
        template = self._syncs.get(protocol_name)
        if template is None:
            template = self._syncs[protocol_name] = _Template.of(
                lambda generation, member_id: SyncGroupRequest(
                    group_id=self.group,
                    generation_id=generation,
                    member_id=member_id,
                    protocol_type="consumer",
                    protocol_name=protocol_name,
                    assignments=[],
                ),
                self.sync_version,
                True,
            )
        return template

    def read_join(self, frame: bytes) -> tuple[int, int, str | None, str, str]:
        """A JoinGroup response's error code, generation, protocol name, leader and
        member id (its member list is decoded only for the leader)."""
        version, flexible = self.join_version, self.join_flexible
        o = _body_at(frame, flexible) + (4 if version >= 2 else 0)
        error, generation = struct.unpack_from(">hi", frame, o)
        o += 6
        if version >= 7:
            _, o = _read_string(frame, o, flexible)
        protocol_name, o = _read_string(frame, o, flexible)
        leader, o = _read_string(frame, o, flexible)
        if version >= 9:
            o += 1
        member_id, o = _read_string(frame, o, flexible)
        return error, generation, protocol_name, leader or "", member_id or ""

    def read_sync_error(self, frame: bytes) -> int:
        o = _body_at(frame, self.sync_flexible) + (4 if self.sync_version >= 1 else 0)
        return int(_INT16.unpack_from(frame, o)[0])

    def read_heartbeat_error(self, frame: bytes) -> int:
        o = _body_at(frame, self.heartbeat_flexible) + (4 if self.heartbeat_version >= 1 else 0)
        return int(_INT16.unpack_from(frame, o)[0])


class _Formation:
    """Members of one group inside one generator until all N have synced one generation.

    Members that synced an older generation learn of the newer one as a consumer does, from
    a Heartbeat (REBALANCE_IN_PROGRESS), but they send it as soon as any member of this
    generator has seen a newer generation (or was told of a rebalance), not after a 3 s
    heartbeat interval: what is measured is the server, not the clients' timers.

    Each member is a state machine driven by its connection's responses (``_Member``);
    members waiting for news wait together, resumed by one callback on a poke, on
    convergence, or after 100 ms (one timer shared by the members waiting at the same
    time). One deadline for the whole formation instead of a timer per request. A task,
    a future and a timer per request, with the general codecs, cost the generator ~40 µs
    per request, as much CPU as the server spent answering.
    """

    def __init__(self, frames: _Frames, n: int) -> None:
        self.frames = frames
        self.n = n
        self.loop = asyncio.get_running_loop()
        self.result: asyncio.Future[None] = self.loop.create_future()
        self.synced: dict[int, int] = {}
        self.done = False
        self.newest = -1
        self.active = 0
        self.members: dict[str, tuple[Wire, Member]] = {}
        self._waiters: list[Callable[[], None]] | None = None

    async def run(self, starts: list[tuple[Wire, Member | None]]) -> None:
        deadline = self.loop.call_later(
            TIMEOUT_S, self.fail, TimeoutError(f"not formed within {TIMEOUT_S:g} s")
        )
        members = [_Member(self, wire, member) for wire, member in starts]
        self.active = len(members)
        try:
            for m in members:
                m.step(m.start)
            if not members:
                self.result.set_result(None)
            await self.result
        finally:
            deadline.cancel()
            for m in members:
                m.detach()

    def fail(self, exc: BaseException) -> None:
        self.done = True
        if not self.result.done():
            self.result.set_exception(exc)

    def finished(self) -> None:
        self.active -= 1
        if self.active == 0 and not self.result.done():
            self.result.set_result(None)

    def saw_generation(self, generation_id: int) -> None:
        if generation_id > self.newest:
            self.newest = generation_id
            self.poke()

    def poke(self) -> None:
        waiters, self._waiters = self._waiters, None
        if waiters:
            self.loop.call_soon(self._resume, waiters)

    def add_synced(self, wire: Wire, member: Member) -> None:
        self.members[member.member_id] = (wire, member)
        count = self.synced.get(member.generation_id, 0) + 1
        self.synced[member.generation_id] = count
        if count == self.n:
            self.done = True
            self.poke()

    def wait_news(self, then: Callable[[], None]) -> None:
        """``then`` after a poke or convergence, or at most 100 ms (the first of the members
        waiting at the same time arms the timer)."""
        if self.done:
            then()
            return
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = []
            self.loop.call_later(0.1, self._news_timer, waiters)
        waiters.append(then)

    def _news_timer(self, waiters: list[Callable[[], None]]) -> None:
        if self._waiters is waiters:
            self.poke()

    def _resume(self, waiters: list[Callable[[], None]]) -> None:
        for then in waiters:
            then()


class _Member:
    """One consumer until the group has converged: (re)join and sync; while synced,
    heartbeat when there is news (or every 100 ms) and rejoin when told to. Started as an
    already synced member, it sends a Heartbeat at once."""

    __slots__ = (
        "client",
        "expected",
        "formation",
        "frames",
        "gone",
        "id_bytes",
        "joins",
        "member",
        "member_id",
        "news",
        "on_response",
        "wire",
    )

    def __init__(self, formation: _Formation, wire: Wire, member: Member | None) -> None:
        self.formation = formation
        self.frames = formation.frames
        self.wire = wire
        self.client = wire.client
        self.member = member
        self.member_id = member.member_id if member is not None else ""
        self.id_bytes = b""  # the member id as the JoinGroup writes it, once known
        self.news = member is not None
        self.joins = 0
        self.gone = False
        self.expected = 0
        self.on_response: Callable[[bytes], None] = self._joined
        self.client.on_frame = self._received
        self.client.on_lost = formation.fail

    def detach(self) -> None:
        self.client.on_frame = None
        self.client.on_lost = None

    def step(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:
            self.formation.fail(exc)

    def _received(self, frame: bytes) -> None:
        try:
            (got,) = _INT32.unpack_from(frame)
            if got != self.expected:
                raise ConnectionError(f"correlation id {got}, expected {self.expected}")
            self.on_response(frame)
        except Exception as exc:
            self.formation.fail(exc)

    def _send(self, frame: bytes, correlation_id: int, then: Callable[[bytes], None]) -> None:
        self.expected = correlation_id
        self.on_response = then
        self.client.write(frame)

    def _finish(self) -> None:
        if not self.gone:
            self.gone = True
            self.formation.finished()

    # -- the steps, in member order ----------------------------------------------------

    def start(self) -> None:
        if self.member is None:
            self._rejoin()
        else:
            self._synced_loop()

    def _rejoin(self) -> None:
        if self.formation.done:
            self._finish()
            return
        self.joins = 0
        self._join()

    def _join(self) -> None:
        if self.member_id and not self.id_bytes:
            self.id_bytes = _string(self.member_id, self.frames.join.flexible)
        middle = self.id_bytes if self.member_id else _string("", self.frames.join.flexible)
        correlation_id = self.client.next_correlation()
        self._send(self.frames.join.frame(correlation_id, middle), correlation_id, self._joined)

    def _joined(self, frame: bytes) -> None:
        frames = self.frames
        error, generation, protocol_name, leader, member_id = frames.read_join(frame)
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            self.joins += 1
            if self.joins == 3:
                raise StepFailed(f"JoinGroup {frames.group}: MEMBER_ID_REQUIRED repeatedly")
            self._set_id(member_id)
            self._join()
            return
        if error != ErrorCode.NONE:
            raise StepFailed(f"JoinGroup {frames.group}: error {error}")
        self._set_id(member_id)
        self.formation.saw_generation(generation)
        is_leader = leader == member_id
        correlation_id = self.client.next_correlation()
        if is_leader:
            # Once per generation: the general codecs, for the member list and assignment.
            _, body = decode_response(BY_KEY[11], frames.join_version, frame)
            joined = cast(JoinGroupResponse, body)
            request = SyncGroupRequest(
                group_id=frames.group,
                generation_id=generation,
                member_id=member_id,
                protocol_type="consumer",
                protocol_name=protocol_name,
                assignments=assign([m.member_id for m in joined.members]),
            )
            sync = encode_request(request, frames.sync_version, correlation_id, CLIENT_ID)
        else:
            middle = _INT32.pack(generation) + _string(member_id, frames.sync_flexible)
            sync = frames.sync(protocol_name).frame(correlation_id, middle)
        self.member = Member(frames.group, member_id, generation, is_leader)
        self._send(sync, correlation_id, self._sync_answered)

    def _set_id(self, member_id: str) -> None:
        if member_id != self.member_id:
            self.member_id, self.id_bytes = member_id, b""

    def _sync_answered(self, frame: bytes) -> None:
        code = self.frames.read_sync_error(frame)
        joined, self.member = self.member, None
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.formation.poke()
            self._rejoin()
            return
        if code != ErrorCode.NONE:
            raise StepFailed(f"SyncGroup {self.frames.group}: error {code}")
        assert joined is not None
        self.member = joined
        self.formation.add_synced(self.wire, joined)
        self.news = False
        self._synced_loop()

    def _synced_loop(self) -> None:
        formation, member = self.formation, self.member
        assert member is not None
        if formation.done:
            self._finish()
        elif not self.news and formation.newest <= member.generation_id:
            formation.wait_news(self._after_wait)
        else:
            self.news = False
            self._heartbeat()

    def _after_wait(self) -> None:
        if self.formation.done:
            self._finish()
            return
        self.news = False
        self.step(self._heartbeat)

    def _heartbeat(self) -> None:
        member = self.member
        assert member is not None
        middle = _INT32.pack(member.generation_id) + _string(
            member.member_id, self.frames.heartbeat.flexible
        )
        correlation_id = self.client.next_correlation()
        self._send(
            self.frames.heartbeat.frame(correlation_id, middle), correlation_id, self._beaten
        )

    def _beaten(self, frame: bytes) -> None:
        code = self.frames.read_heartbeat_error(frame)
        if code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
            self.member = None
            self._rejoin()
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member = None
            self._set_id("")
            self._rejoin()
        elif code != ErrorCode.NONE:
            raise StepFailed(f"Heartbeat {self.frames.group}: error {code}")
        else:
            self.formation.wait_news(self._after_beat)

    def _after_beat(self) -> None:
        self.step(self._synced_loop)


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
    return await _converge(
        [(w, None) for w in wires], group, session_timeout_ms, rebalance_timeout_ms
    )


async def rejoin_group(
    pairs: list[tuple[Wire, Member]],
    group: str,
    *,
    session_timeout_ms: int = 60000,
    rebalance_timeout_ms: int = 60000,
) -> list[tuple[Wire, Member]]:
    """Synced members of ``group`` each send a Heartbeat at once, and rejoin if told to,
    until all of them have synced one generation; returns them as ``form_group`` does."""
    starts: list[tuple[Wire, Member | None]] = list(pairs)
    return await _converge(starts, group, session_timeout_ms, rebalance_timeout_ms)


async def _converge(
    starts: list[tuple[Wire, Member | None]],
    group: str,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
) -> list[tuple[Wire, Member]]:
    frames = _Frames(group, starts[0][0].versions, session_timeout_ms, rebalance_timeout_ms)
    formation = _Formation(frames, len(starts))
    await formation.run(starts)
    newest = max(g for g, count in formation.synced.items() if count == formation.n)
    return [(w, m) for w, m in formation.members.values() if m.generation_id == newest]


async def heartbeat(wire: Wire, member: Member) -> int:
    resp = await wire.call(
        HeartbeatRequest(
            group_id=member.group, generation_id=member.generation_id, member_id=member.member_id
        )
    )
    return int(resp.error_code)


async def leave_all(wire: Wire, group: str, member_ids: list[str]) -> None:
    """Every member leaves: one batched LeaveGroup (v3+, KIP-345), else one per member.
    Cleanup between measurements: errors are not the measurement's, so they are ignored."""
    try:
        if wire.versions.pick(LeaveGroupRequest) >= 3:
            members = [LeaveGroupRequestMemberIdentity(member_id=m) for m in member_ids]
            await wire.call(LeaveGroupRequest(group_id=group, members=members))
        else:
            for m in member_ids:
                await wire.call(LeaveGroupRequest(group_id=group, member_id=m))
    except (StepFailed, TimeoutError, ConnectionError):
        pass


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
