"""The heartbeat lane answers Heartbeat frames exactly as the general request path would:
the same bytes for every state and field a client may send, the same session timers, the
same checks (authorization), the same metrics; over real sockets, sessions stay alive and
still expire, and a malformed heartbeat closes only its own connection."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, PartitionState
from coordinator.group.config import GroupConfig
from coordinator.group.deadlines import heartbeat_key
from coordinator.handlers import heartbeat_lane
from coordinator.handlers.heartbeat_lane import HeartbeatLane
from coordinator.settings.config import Settings
from coordinator.shell.connection import ConnectionProtocol
from coordinator.shell.runtime import Runtime
from coordinator.shell.server import (
    HEARTBEATS_PER_SLOT,
    REQUESTS_PER_TURN,
    KafkaConnection,
    Server,
)
from coordinator.telemetry.metrics import Metrics
from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.apis.sync_group import SyncGroupRequest
from protocol.errors import ErrorCode
from protocol.frames import Request, decode_response, encode_request
from tests.coordinator.shell.pipeline import Answer, Pipeline
from tests.coordinator.shell.test_pipeline import secured
from tests.hypothesis_profiles import examples

GROUP = "g"


def join(p: Pipeline, conn: ConnectionProtocol, member_id: str, instance: str | None) -> Answer:
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    answer = p.send(conn, request, 5)
    assert isinstance(answer, Answer)
    return answer


def settled(p: Pipeline, answer: Answer) -> Any:
    p.advance(0)  # the join timer (initial delay 0) fires
    return answer.body if answer.body is not None else answer.later()


def stable_group(p: Pipeline) -> tuple[str, str, int]:
    """A Stable group of a dynamic member (the leader) and a static one ("i1")."""
    conn = p.connect()
    leader = join(p, conn, "", None).body.member_id
    first = settled(p, join(p, conn, leader, None))
    assert first.error_code == ErrorCode.NONE
    sync = SyncGroupRequest(group_id=GROUP, generation_id=first.generation_id, member_id=leader)
    assert isinstance(p.send(conn, sync, 3), Answer)
    static_join = join(p, conn, "", "i1")  # a rebalance: the leader must rejoin too
    again = settled(p, join(p, conn, leader, None))
    static = settled(p, static_join)
    generation = again.generation_id
    for member, instance in ((leader, None), (static.member_id, "i1")):
        req = SyncGroupRequest(
            group_id=GROUP, generation_id=generation, member_id=member, group_instance_id=instance
        )
        p.send(conn, req, 3)
    assert p.node.groups.groups[GROUP].state.value == "Stable"
    return leader, static.member_id, generation


def start_rebalance(p: Pipeline) -> None:
    conn = p.connect()
    newcomer = join(p, conn, "", None).body.member_id
    join(p, conn, newcomer, None)


def general_answer(p: Pipeline, conn: ConnectionProtocol, frame: bytes) -> bytes:
    request = conn.receive(frame)
    assert isinstance(request, Request)
    answer = p.carry_out(p.dispatcher.dispatch(request, conn.conn))
    return conn.response(request, answer.body)


def heartbeat_frame(
    version: int,
    correlation: int,
    client_id: str | None,
    group: str,
    generation: int,
    member: str,
    instance: str | None,
) -> bytes:
    body = HeartbeatRequest(
        group_id=group,
        generation_id=generation,
        member_id=member,
        group_instance_id=instance if version >= 3 else None,
    )
    return encode_request(body, version, correlation, client_id)[4:]


@settings(
    max_examples=examples(150, fast=50), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_the_lane_answers_byte_for_byte_as_the_general_path(data: st.DataObject) -> None:
    p = Pipeline(Settings(group=GroupConfig(initial_rebalance_delay_ms=0)))
    leader, static, generation = stable_group(p)
    lane = HeartbeatLane(p.node)
    general, fast = p.connect(), p.connect()
    for _ in range(data.draw(st.integers(1, 6))):
        frame = heartbeat_frame(
            data.draw(st.integers(0, 4)),
            data.draw(st.integers(-(2**31), 2**31 - 1)),
            data.draw(st.sampled_from([None, "", "consumer-1", "é"])),
            data.draw(st.sampled_from([GROUP, "", "other"])),
            generation + data.draw(st.integers(-1, 1)),
            data.draw(st.sampled_from([leader, static, "nobody", ""])),
            data.draw(st.sampled_from([None, "i1", "i2"])),
        )
        if data.draw(st.booleans()):  # a rebalance in progress (the lane reads state afresh)
            start_rebalance(p)
        now = p.clock.now_ms()
        expected = general_answer(p, general, frame)
        deadlines = {m: p.node.groups.timer_deadline(heartbeat_key(GROUP, m)) for m in (leader,)}
        answer = lane.answer(frame, fast.conn, now)
        assert answer is not None
        assert answer[0] == expected
        assert fast.conn.client_id == general.conn.client_id
        assert deadlines == {
            m: p.node.groups.timer_deadline(heartbeat_key(GROUP, m)) for m in (leader,)
        }
        p.clock.advance(data.draw(st.integers(0, 3000)))


def test_a_heartbeat_the_acls_forbid_is_refused_by_the_lane_as_by_the_general_path() -> None:
    p = secured()
    lane = HeartbeatLane(p.node)
    general, fast = p.connect(), p.connect()
    frame = heartbeat_frame(4, 7, "c", GROUP, 1, "m", None)
    expected = general_answer(p, general, frame)
    _, body = decode_response(BY_KEY[12], 4, expected[4:])
    assert isinstance(body, HeartbeatResponse)
    assert body.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    answer = lane.answer(frame, fast.conn, p.clock.now_ms())
    assert answer is not None and answer[0] == expected


@pytest.mark.parametrize(
    ("state", "code"),
    [
        (None, ErrorCode.NOT_COORDINATOR),
        # Kafka answers a heartbeat for a group still loading blindly with NONE (aiokafka
        # stops coordinating on COORDINATOR_LOAD_IN_PROGRESS there).
        (PartitionState.LOADING, ErrorCode.NONE),
    ],
)
def test_a_group_this_node_does_not_serve_yet_is_answered_by_the_lane_as_by_the_general_path(
    state: PartitionState | None, code: ErrorCode
) -> None:
    p = Pipeline(Settings(node_id=1))
    mine = {} if state is None else {partition_for(GROUP, 6): state}
    p.node.routing = ClusterRouting(
        node_id=1, partitions=6, mine=mine, lease_valid_until_ms=p.clock.now_ms() + 60_000
    )
    lane = HeartbeatLane(p.node)
    general, fast = p.connect(), p.connect()
    for version in range(5):
        frame = heartbeat_frame(version, 7, "c", GROUP, 1, "m", None)
        expected = general_answer(p, general, frame)
        _, body = decode_response(BY_KEY[12], version, expected[4:])
        assert isinstance(body, HeartbeatResponse) and body.error_code == code
        answer = lane.answer(frame, fast.conn, p.clock.now_ms())
        assert answer is not None and answer[0] == expected
    assert GROUP not in p.node.groups.groups  # nothing was created or checked


@pytest.mark.parametrize(
    "frame",
    [
        heartbeat_frame(4, 1, "c", GROUP, 1, "m", None)[:-3],  # truncated
        heartbeat_frame(4, 1, "c", GROUP, 1, "m", None) + b"\x00",  # trailing byte
        heartbeat_frame(2, 1, "c", GROUP, 1, "m", None)[:2] + b"\x00\x05" + b"\x00" * 12,
        b"\x00\x0c\x00",
    ],
    ids=["truncated", "trailing", "unserved-version", "short"],
)
def test_frames_the_lane_cannot_read_go_to_the_general_path(frame: bytes) -> None:
    p = Pipeline()
    conn = p.connect()
    assert HeartbeatLane(p.node).answer(frame, conn.conn, p.clock.now_ms()) is None
    assert not isinstance(conn.receive(frame), Request)  # which refuses them


def test_the_memo_answers_from_the_current_state_and_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heartbeat_lane, "MEMO_ENTRIES", 8)
    p = Pipeline(Settings(group=GroupConfig(initial_rebalance_delay_ms=0)))
    leader, _static, generation = stable_group(p)
    lane = HeartbeatLane(p.node)
    conn = p.connect().conn
    frame = heartbeat_frame(4, 1, "c", GROUP, generation, leader, None)

    def error(correlation: int) -> int:
        again = frame[:4] + struct.pack(">i", correlation) + frame[8:]
        answer = lane.answer(again, conn, p.clock.now_ms())
        assert answer is not None
        data, _version, error, _key, _deadline = answer
        assert struct.unpack(">i", data[4:8])[0] == correlation
        return error

    assert error(1) == ErrorCode.NONE
    start_rebalance(p)
    assert error(2) == ErrorCode.REBALANCE_IN_PROGRESS  # the same bytes, remembered
    for i in range(8 * 2):
        other = heartbeat_frame(4, i, "c", GROUP, generation, f"m{i}", None)
        assert lane.answer(other, conn, p.clock.now_ms()) is not None
    assert len(lane.memo) <= 8


def test_a_connection_carrying_many_members_decodes_each_frame_once() -> None:
    # The depth-64 benchmark's shape: one connection, 64 members, round after round.
    p = Pipeline(Settings(group=GroupConfig(initial_rebalance_delay_ms=0)))
    leader, _static, generation = stable_group(p)
    lane = HeartbeatLane(p.node)
    conn = p.connect().conn
    frames = [heartbeat_frame(4, i, "c", GROUP, generation, f"m{i}", None) for i in range(63)]
    frames.append(heartbeat_frame(4, 63, "c", GROUP, generation, leader, None))
    for _ in range(3):
        answers = [lane.answer(f, conn, p.clock.now_ms()) for f in frames]
        assert [a[2] for a in answers if a is not None][-2:] == [
            ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.NONE,
        ]
    assert lane.decoded == 64
    # Another connection sending the same bytes is answered from the same memo, as itself.
    other = p.connect().conn
    other_answer = lane.answer(frames[-1], other, p.clock.now_ms())
    assert other_answer is not None and other_answer[2] == ErrorCode.NONE
    assert lane.decoded == 64 and other.client_id == "c"


def test_a_thrashing_memo_stops_remembering_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    # More members heartbeating in turn than the memo holds: every entry would be garbage
    # before its next use (100,000 members made the collector run full collections).
    monkeypatch.setattr(heartbeat_lane, "MEMO_ENTRIES", 8)
    monkeypatch.setattr(heartbeat_lane, "MEMO_BYPASS", 20)
    p = Pipeline(Settings(group=GroupConfig(initial_rebalance_delay_ms=0)))
    leader, _static, generation = stable_group(p)
    lane = HeartbeatLane(p.node)
    conn = p.connect().conn
    frames = [heartbeat_frame(4, i, "c", GROUP, generation, f"m{i}", None) for i in range(50)]
    sizes = []
    for f in frames[:9]:  # fills it, then a miss finds it full with no hits: bypass
        assert lane.answer(f, conn, p.clock.now_ms()) is not None
        sizes.append(len(lane.memo))
    assert sizes == [1, 2, 3, 4, 5, 6, 7, 8, 0]
    for f in frames[9:29]:  # 20 misses answered without being remembered
        answer = lane.answer(f, conn, p.clock.now_ms())
        assert answer is not None and answer[2] == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(lane.memo) == 0
    lane.answer(frames[29], conn, p.clock.now_ms())
    assert len(lane.memo) == 1  # remembering again
    good = heartbeat_frame(4, 99, "c", GROUP, generation, leader, None)
    answer = lane.answer(good, conn, p.clock.now_ms())
    assert answer is not None and answer[2] == ErrorCode.NONE


# -- over sockets --------------------------------------------------------------------------


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            data_dir=tmp_path,
            group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100),
        )
    )
    await srv.start()
    assert srv.runtime is not None
    srv.runtime.metrics = Metrics()
    yield srv
    await srv.stop()


def runtime(server: Server) -> Runtime:
    assert server.runtime is not None
    return server.runtime


class Wire:
    """A client on a raw socket: pipelined frames, responses read back in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0

    async def call(self, body: object, version: int, count: int = 1) -> list[bytes]:
        frames = []
        for _ in range(count):
            self.correlation += 1
            frames.append(encode_request(body, version, self.correlation, "lane-test"))  # type: ignore[arg-type]
        self.writer.write(b"".join(frames))
        out = []
        for _ in range(count):
            (size,) = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 5))
            out.append(await self.reader.readexactly(size))
        return out


async def wire(server: Server) -> Wire:
    return Wire(*await asyncio.open_connection("127.0.0.1", server.port))


def _body(api: int, version: int, frame: bytes) -> object:
    return decode_response(BY_KEY[api], version, frame)[1]


async def _member(w: Wire, session_ms: int) -> tuple[str, int]:
    def req(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=session_ms,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )

    (first,) = await w.call(req(""), 5)
    member_id = _body(11, 5, first).member_id  # type: ignore[attr-defined]
    (joined,) = await w.call(req(member_id), 5)
    generation = _body(11, 5, joined).generation_id  # type: ignore[attr-defined]
    sync = SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id)
    await w.call(sync, 3)
    return member_id, generation


@pytest.mark.integration  # waits for a real session to run out (over 2 s)
async def test_over_sockets_heartbeats_keep_a_session_and_its_end_expires_it(
    server: Server,
) -> None:
    w = await wire(server)
    # The daemon shares this loop: a session of 1 s, so that a loaded machine standing
    # still for a few hundred ms does not end it between two rounds.
    member_id, generation = await _member(w, session_ms=1000)
    hb = HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id)
    for _ in range(25):  # over two session timeouts of pipelined heartbeats
        answers = await w.call(hb, 4, count=8)
        assert [_body(12, 4, a).error_code for a in answers] == [0] * 8  # type: ignore[attr-defined]
        await asyncio.sleep(0.1)
    assert member_id in runtime(server).groups.groups[GROUP].members
    # The lane answered them (its memo holds the connection's one heartbeat frame), and,
    # where it is built, the compiled lane answered most of them from that memo.
    lane = runtime(server).heartbeat_lane
    assert lane is not None and len(lane.memo) == 1
    compiled = runtime(server).heartbeat_batch
    assert compiled is None or compiled.answered >= 8 * 20
    await asyncio.sleep(1.5)  # silence: the session runs out
    assert member_id not in runtime(server).groups.groups[GROUP].members
    (late,) = await w.call(hb, 4)
    assert _body(12, 4, late).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
    metrics = runtime(server).metrics
    assert metrics is not None
    registry = metrics.registry
    labels = {"api": "Heartbeat", "version": "4"}
    assert registry.get_sample_value("group_coordinator_requests_total", labels) == 25 * 8 + 1
    errors = {"api": "Heartbeat", "error": "UNKNOWN_MEMBER_ID"}
    assert registry.get_sample_value("group_coordinator_errors_total", errors) == 1
    w.writer.close()


async def test_a_malformed_heartbeat_closes_only_its_connection(server: Server) -> None:
    healthy, bad = await wire(server), await wire(server)
    member_id, generation = await _member(healthy, session_ms=10_000)
    frame = encode_request(HeartbeatRequest(group_id=GROUP, member_id="m"), 4, 1, "x")
    bad.writer.write(frame[:-2] + b"\xff\xff")  # a string length past the end
    assert await asyncio.wait_for(bad.reader.read(), 5) == b""  # closed, no answer
    hb = HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id)
    (answer,) = await healthy.call(hb, 4)
    assert _body(12, 4, answer).error_code == 0  # type: ignore[attr-defined]
    healthy.writer.close()


# -- turns ---------------------------------------------------------------------------------


class Recorder:
    """A transport that keeps each write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def pause_reading(self) -> None:  # over 64 requests queued
        pass

    def resume_reading(self) -> None:
        pass


def _correlations(writes: list[bytes]) -> list[int]:
    stream, out = b"".join(writes), []
    while stream:
        (size, correlation) = struct.unpack_from(">ii", stream)
        out.append(correlation)
        stream = stream[4 + size :]
    return out


async def test_pipelined_heartbeats_are_answered_a_turn_at_a_time_in_order() -> None:
    runtime = Runtime(Settings(store="memory"), asyncio.get_running_loop())
    conn = KafkaConnection(runtime, set())
    sink = Recorder()
    conn.transport = sink  # type: ignore[assignment]
    hb = HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m")
    per_turn = REQUESTS_PER_TURN * HEARTBEATS_PER_SLOT
    conn.data_received(b"".join(encode_request(hb, 4, i, "c") for i in range(200)))
    # One turn: a turn's worth of heartbeats, answered in one write; the rest wait for the
    # loop to serve others first.
    assert _correlations(sink.writes) == list(range(per_turn))
    assert [len(_correlations([w])) for w in sink.writes] == [per_turn]
    for _ in range(10):
        await asyncio.sleep(0)
    assert _correlations(sink.writes) == list(range(200))


async def test_other_requests_take_a_full_slot_of_the_turn() -> None:
    runtime = Runtime(Settings(store="memory"), asyncio.get_running_loop())
    conn = KafkaConnection(runtime, set())
    sink = Recorder()
    conn.transport = sink  # type: ignore[assignment]
    frames = [encode_request(ApiVersionsRequest(), 3, i, "c") for i in range(40)]
    conn.data_received(b"".join(frames))
    assert _correlations(sink.writes) == list(range(REQUESTS_PER_TURN))
    for _ in range(10):
        await asyncio.sleep(0)
    assert _correlations(sink.writes) == list(range(40))
