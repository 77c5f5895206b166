"""Hot connections (``coordinator/shell/hot_reads.py``): a connection whose reads the
compiled lane answers whole is read, answered and written in C, and hands back to its
transport at the first read it cannot answer whole.

A client sees none of it: one daemon holds the same scenario twice (groups of two
prefixes) and gets the same generated request stream twice, once with hot reads off and
once going hot after every few whole reads. The stream mixes steady heartbeats of both
protocols (the walker's), heartbeats it leaves to Python (unknown members, stale
generations), other requests, and frames cut at random bytes across writes; the two
passes must get the same bytes back, in the same order. Around that: a client that stops
reading gets every answer, the end of the stream, a frame over the limit, a server stop
and the idle timeout behave as without hot reads."""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.steady import stable_classic_member
from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, PartitionState
from coordinator.fastlane.batch import compiled, forced_pure
from coordinator.group.config import GroupConfig
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import ANONYMOUS, SecuritySettings
from coordinator.settings.config import Settings
from coordinator.settings.limits import ConnectionLimits
from coordinator.shell import server as server_module
from coordinator.shell.hot_reads import HOT_AFTER_READS
from coordinator.shell.server import Server
from coordinator.store.base import SecurityRows
from coordinator.telemetry.settings import ObservabilitySettings
from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.metadata import MetadataRequest
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request

pytestmark = pytest.mark.skipif(
    not compiled() or forced_pure(), reason="hot reads need the compiled heartbeat lane"
)

CLIENT = "hot-reads-test"
ALLOW = Permission.ALLOW
NEVER = 10**9


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await _start(tmp_path)
    yield srv
    await srv.stop()


async def _start(
    tmp_path: Path,
    limits: ConnectionLimits | None = None,
    metrics: bool = False,
    acls: bool = False,
) -> Server:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            data_dir=tmp_path,
            topics=(("orders", 4),),
            group=GroupConfig(initial_rebalance_delay_ms=0),
            limits=limits or ConnectionLimits(),
            observability=ObservabilitySettings(
                metrics_listen=("127.0.0.1", 0) if metrics else None
            ),
            security=SecuritySettings(acls_enabled=acls),
        )
    )
    await srv.start()
    return srv


@dataclass
class Members:
    prefix: str
    classic: str = ""
    generation: int = 0
    epoch: int = 0

    @property
    def consumer(self) -> str:
        return "steady-member"  # chosen by the client: the same in both scenarios


async def _members(port: int, prefix: str) -> Members:
    m = Members(prefix)
    c = await connect("127.0.0.1", port, client_id=CLIENT)
    await _classic(c, m)
    await _consumer(c, m)
    c.close()
    return m


async def _classic(c: KafkaConnectionClient, m: Members) -> None:
    m.classic, m.generation = await stable_classic_member(c, f"{m.prefix}-classic", 60_000)


async def _consumer(c: KafkaConnectionClient, m: Members) -> None:
    """Joined and reconciled: its next heartbeats are steady (ids and epoch only)."""
    body = ConsumerGroupHeartbeatRequest(
        group_id=f"{m.prefix}-consumer",
        member_id=m.consumer,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )
    owned: list[int] = []
    for _ in range(50):
        r = await c.request(body, 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == 0, r
        if r.assignment is not None:
            owned = sorted(p for t in r.assignment.topic_partitions for p in t.partitions)
        elif owned:
            m.epoch = r.member_epoch
            return
        body = ConsumerGroupHeartbeatRequest(
            group_id=f"{m.prefix}-consumer",
            member_id=m.consumer,
            member_epoch=r.member_epoch,
            topic_partitions=[
                ConsumerGroupHeartbeatRequestTopicPartitions(
                    topic_id=r.assignment.topic_partitions[0].topic_id if r.assignment else None,
                    partitions=owned,
                )
            ]
            if r.assignment
            else [],
        )
        await asyncio.sleep(0.02)
    raise AssertionError("the consumer member did not reconcile")


#: Frame kinds: the walker's (steady heartbeats of both protocols) and the rest.
STEADY = ("heartbeat", "consumer")
OTHERS = (
    "heartbeat-unknown",
    "heartbeat-generation",
    "consumer-unknown",
    "api-versions",
    "metadata",
)


def _frame(m: Members, kind: str, version: int, correlation: int) -> bytes:
    body: object
    if kind.startswith("heartbeat"):
        body = HeartbeatRequest(
            group_id=f"{m.prefix}-classic",
            generation_id=m.generation + (1 if kind == "heartbeat-generation" else 0),
            member_id="nobody" if kind == "heartbeat-unknown" else m.classic,
        )
        return encode_request(body, version % 5, correlation, CLIENT)
    if kind.startswith("consumer"):
        body = ConsumerGroupHeartbeatRequest(
            group_id=f"{m.prefix}-consumer",
            member_id="nobody" if kind == "consumer-unknown" else m.consumer,
            member_epoch=m.epoch,
        )
        return encode_request(body, version % 2, correlation, CLIENT)
    if kind == "api-versions":
        return encode_request(ApiVersionsRequest(), version % 3, correlation, CLIENT)
    return encode_request(MetadataRequest(topics=None), 12, correlation, CLIENT)


def _script(rng: random.Random) -> list[tuple[list[tuple[str, int]], int]]:
    """Rounds of (frames, cuts): each round's frames written in ``cuts`` + 1 pieces, its
    answers read before the next round. Runs of whole steady rounds let it go hot."""
    rounds: list[tuple[list[tuple[str, int]], int]] = []
    for _ in range(12):
        for _ in range(rng.randrange(0, 14)):
            frames = [(rng.choice(STEADY), rng.randrange(8)) for _ in range(rng.randrange(1, 5))]
            rounds.append((frames, 0))
        mixed = [
            (rng.choice(STEADY + OTHERS), rng.randrange(8)) for _ in range(rng.randrange(1, 6))
        ]
        rounds.append((mixed, rng.randrange(0, 3)))
    return rounds


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = await asyncio.wait_for(reader.readexactly(4), 5)
    return size + await reader.readexactly(int.from_bytes(size, "big"))


async def _read_frames(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    frames: list[bytes] = []
    buffer = b""
    while len(frames) < n:
        chunk = await reader.read(1 << 20)
        assert chunk, f"closed after {len(frames)} of {n} answers"
        buffer += chunk
        at = 0
        while len(buffer) - at >= 4:
            end = at + 4 + int.from_bytes(buffer[at : at + 4], "big")
            if end > len(buffer):
                break
            frames.append(buffer[at:end])
            at = end
        buffer = buffer[at:]
    return frames


async def _play(
    srv: Server, m: Members, script: list[tuple[list[tuple[str, int]], int]], seed: int
) -> tuple[list[bytes], int]:
    """The answers to ``script`` on one connection, and in how many rounds it was hot."""
    rng = random.Random(seed)
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    answers: list[bytes] = []
    hot_rounds, correlation = 0, 0
    for frames, cuts in script:
        data = b""
        for kind, version in frames:
            correlation += 1
            data += _frame(m, kind, version, correlation)
        at = sorted(rng.randrange(1, len(data)) for _ in range(cuts))
        for start, end in zip([0, *at], [*at, len(data)], strict=True):
            writer.write(data[start:end])
            await writer.drain()
            await asyncio.sleep(0.001)  # each piece its own read
        # Error messages name the group: the prefixes are as long, and masked.
        for _ in frames:
            answers.append((await _read_frame(reader)).replace(m.prefix.encode(), b"****"))
        hot_rounds += any(conn.hot is not None for conn in srv.connections)
    writer.close()
    await writer.wait_closed()
    for _ in range(100):  # until the server has seen the end (and settled)
        if not srv.connections:
            break
        await asyncio.sleep(0.01)
    return answers, hot_rounds


def _counts(srv: Server) -> tuple[float, ...]:
    """What the lanes counted whichever answered (the compiled walker, the Python lanes:
    which one depends on where reads split): steady ConsumerGroupHeartbeats answered, and
    with metrics the requests of each heartbeat API and version."""
    assert srv.runtime is not None and srv.runtime.heartbeat_batch is not None
    batch, metrics = srv.runtime.heartbeat_batch, srv.runtime.metrics
    assert batch.consumer_lane is not None
    counted: tuple[float, ...] = (batch.consumer_lane.answered,)
    if metrics is not None:
        metrics.flush()
        (family,) = metrics.requests.collect()  # not the registry: its live gauges ask the loop
        by_labels = {
            (x.labels["api"], x.labels["version"]): x.value
            for x in family.samples
            if x.name.endswith("_total")
        }
        for api, versions in (("Heartbeat", range(5)), ("ConsumerGroupHeartbeat", range(2))):
            counted += tuple(by_labels.get((api, str(v)), 0.0) for v in versions)
    return counted


def _since(after: tuple[float, ...], before: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


@pytest.mark.parametrize(("seed", "metrics"), [(1, False), (2, False), (3, True), (4, True)])
async def test_hot_reads_answer_the_bytes_the_transport_path_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, metrics: bool
) -> None:
    server = await _start(tmp_path, metrics=metrics)
    try:
        await _compare(server, monkeypatch, seed)
    finally:
        await server.stop()


async def _compare(server: Server, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    # Prefixes as long as each other: error messages name the group.
    cold, hot = await _members(server.port, "cold"), await _members(server.port, "warm")
    script = _script(random.Random(seed))

    monkeypatch.setattr(server_module, "HOT_AFTER_READS", NEVER)
    before = _counts(server)
    cold_answers, cold_hot = await _play(server, cold, script, seed)
    cold_counts = _since(_counts(server), before)

    monkeypatch.setattr(server_module, "HOT_AFTER_READS", 3)
    before = _counts(server)
    assert server.runtime is not None
    started_ms = server.runtime.now_ms()
    hot_answers, hot_rounds = await _play(server, hot, script, seed)
    hot_counts = _since(_counts(server), before)
    # Its session moved by the daemon's clock (the reader reads the loop's as LoopClock).
    groups, armed = server.runtime.node.groups.heartbeat_tables()
    member = groups["warm-classic"].members[hot.classic]  # type: ignore[attr-defined]
    assert started_ms <= member.last_heartbeat_ms <= server.runtime.now_ms()
    assert armed[member.heartbeat_key].deadline_ms == member.last_heartbeat_ms + 60_000

    assert cold_hot == 0
    assert hot_rounds > len(script) // 4  # it did go hot, again and again
    assert len(hot_answers) == len(cold_answers)
    for i, (h, c) in enumerate(zip(hot_answers, cold_answers, strict=True)):
        assert h == c, f"answer {i} differs"
    # The same frames counted the same.
    assert hot_counts == cold_counts
    assert hot_counts[0] > 0


async def _go_hot(srv: Server, m: Members) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    for i in range(HOT_AFTER_READS + 2):
        writer.write(_frame(m, "heartbeat", 4, i))
        await _read_frame(reader)
    assert [conn.hot is not None for conn in srv.connections] == [True]
    return reader, writer


def _error(kind: str, answer: bytes) -> int:
    """The error code of the answer (size prefix included) to ``_frame(m, kind, 4, _)``."""
    key, version = (12, 4) if kind.startswith("heartbeat") else (68, 0)
    return int(decode_response(BY_KEY[key], version, answer[4:])[1].error_code)  # type: ignore[attr-defined]


@pytest.mark.parametrize("checks", ["acls", "cluster"])
async def test_where_admission_checks_a_connection_never_goes_hot_and_a_refusal_is_heard(
    tmp_path: Path, checks: str
) -> None:
    """The hot reader checks no admission: with ACLs, or in a cluster, a connection stays
    on the transport path, where the compiled walker answers only the groups it was
    admitted to, until the ACLs change (GROUP_AUTHORIZATION_FAILED) or the node's lease
    may have run out (NOT_COORDINATOR)."""
    srv = await _start(tmp_path, acls=checks == "acls")
    runtime = srv.runtime
    assert runtime is not None
    node = runtime.node
    groups = ("checked-classic", "checked-consumer")

    def allow(names: tuple[str, ...]) -> None:
        rows = [
            AclBinding(ANONYMOUS, ResourceType.GROUP, g, PatternType.LITERAL, Operation.READ, ALLOW)
            for g in names
        ]
        topic = AclBinding(
            ANONYMOUS, ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.DESCRIBE, ALLOW
        )
        node.security.load(SecurityRows(acls=(*rows, topic)))

    routing = ClusterRouting(
        node_id=0,
        partitions=6,
        mine={partition_for(g, 6): PartitionState.OWNED for g in groups},
        lease_valid_until_ms=runtime.now_ms() + 600_000,
    )
    if checks == "acls":
        allow(groups)
    else:
        node.routing = routing
    try:
        m = await _members(srv.port, "checked")
        batch = runtime.heartbeat_batch
        assert batch is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        before = batch.answered
        for i in range(HOT_AFTER_READS * 2):
            writer.write(_frame(m, STEADY[i % 2], 4, i))
            assert _error(STEADY[i % 2], await _read_frame(reader)) == 0
        assert [conn.hot is not None for conn in srv.connections] == [False]
        assert batch.answered - before >= HOT_AFTER_READS  # in C, not hot
        if checks == "acls":
            allow(("another-group",))
            refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            routing.lease_valid_until_ms = runtime.now_ms()
            refused = ErrorCode.NOT_COORDINATOR
        for i, kind in enumerate(STEADY):
            writer.write(_frame(m, kind, 4, 100 + i))
        answers = await _read_frames(reader, 2)
        assert [_error(kind, a) for kind, a in zip(STEADY, answers, strict=True)] == [refused] * 2
        writer.close()
    finally:
        await srv.stop()


async def test_what_a_hot_reader_answered_is_booked_when_it_settles(server: Server) -> None:
    """Without metrics the reader books its reads on settling: the idle sweep settles
    every hot connection, and cooling settles it."""
    m = await _members(server.port, "owed")
    assert server.runtime is not None and server.runtime.heartbeat_batch is not None
    batch = server.runtime.heartbeat_batch
    before = batch.answered
    reader, writer = await _go_hot(server, m)
    (conn,) = server.connections
    conn.ctx.client_id = "someone else"
    for i in range(50):
        writer.write(_frame(m, "heartbeat", 4, i))
        await _read_frame(reader)
    await asyncio.sleep(1.1)  # a sweep (at most every second)
    assert conn.hot is not None  # still hot, settled by the sweep
    # Every heartbeat but the first (not in the memo yet: the Python lane decoded it).
    walked = HOT_AFTER_READS + 2 - 1
    assert batch.answered - before == walked + 50
    assert conn.ctx.client_id == CLIENT
    writer.write(_frame(m, "heartbeat", 4, 99))
    await _read_frame(reader)
    conn.cool()
    assert batch.answered - before == walked + 51
    writer.close()


async def test_a_hot_client_that_stops_reading_gets_every_answer_in_order(server: Server) -> None:
    m = await _members(server.port, "slow")
    reader, writer = await _go_hot(server, m)
    # Small socket buffers on both sides, so that the reader's writes fill them.
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    (conn,) = server.connections
    assert conn.transport is not None
    conn.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    # Whole frames in each write, each its own read: answered hot, until the socket
    # takes no more of the answers and the reader hands what it could not send back.
    per_write, writes = 100, 200
    n = per_write * writes
    for w in range(writes):
        first = 1000 + w * per_write
        writer.write(b"".join(_frame(m, "heartbeat", 4, first + i) for i in range(per_write)))
        await asyncio.sleep(0.001)
    got = await asyncio.wait_for(_read_frames(reader, n), 20)
    assert [int.from_bytes(a[4:8], "big") for a in got] == list(range(1000, 1000 + n))
    assert all(a[8:] == got[0][8:] for a in got)  # throttle time, no error
    writer.close()


async def test_a_hot_connection_sees_the_end_of_its_stream(server: Server) -> None:
    m = await _members(server.port, "eof")
    _, writer = await _go_hot(server, m)
    (conn,) = server.connections
    reader_fd = conn.hot.reader.fd if conn.hot else -1
    writer.close()
    for _ in range(100):
        if not server.connections:
            break
        await asyncio.sleep(0.01)
    assert not server.connections and conn.hot is None
    with pytest.raises(OSError):
        socket.socket(fileno=reader_fd).close()  # the reader's dup is closed too


async def test_a_frame_over_the_limit_closes_a_hot_connection_after_its_answers(
    server: Server,
) -> None:
    m = await _members(server.port, "big")
    reader, writer = await _go_hot(server, m)
    writer.write(_frame(m, "heartbeat", 4, 77) + (200 * 1024 * 1024).to_bytes(4, "big"))
    answer = await _read_frame(reader)
    assert int.from_bytes(answer[4:8], "big") == 77
    assert await asyncio.wait_for(reader.read(), 5) == b""  # then closed
    writer.close()


async def test_stopping_the_server_closes_hot_connections(tmp_path: Path) -> None:
    srv = await _start(tmp_path)
    m = await _members(srv.port, "stop")
    reader, writer = await _go_hot(srv, m)
    await asyncio.wait_for(srv.stop(), 5)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()


async def test_a_busy_hot_connection_is_not_idle_and_an_idle_one_is_closed(
    tmp_path: Path,
) -> None:
    srv = await _start(tmp_path, ConnectionLimits(connections_max_idle_ms=400))
    try:
        m = await _members(srv.port, "idle")
        reader, writer = await _go_hot(srv, m)
        for i in range(40):  # 0.8 s of heartbeats, twice the idle limit
            writer.write(_frame(m, "heartbeat", 4, i))
            await _read_frame(reader)
            await asyncio.sleep(0.02)
        assert len(srv.connections) == 1
        assert await asyncio.wait_for(reader.read(), 5) == b""  # idle: closed
        writer.close()
    finally:
        await srv.stop()
