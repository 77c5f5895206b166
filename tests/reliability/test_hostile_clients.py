"""A garbage client and a connection storm against a daemon process, while well-behaved
members heartbeat: the daemon keeps serving, nobody is expired or rebalanced, and file
descriptors and memory come back."""

from __future__ import annotations

import asyncio
import os
import random
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench import slow_clients
from bench.probe import percentile_ms
from coordinator.client.member import GroupMember
from coordinator.client.pool import ConnectionPool
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.describe_groups import DescribeGroupsRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.apis.list_groups import ListGroupsRequest
from protocol.apis.metadata import MetadataRequest
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.frames import encode_request
from tests.integration.conftest import Daemon

pytestmark = pytest.mark.integration

GARBAGE_FRAMES = 100_000
GARBAGE_CONNECTIONS = 100
RSS_BOUND_MB = 300


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(
        tmp_path,
        "--topic",
        "t:4",
        "--group-initial-rebalance-delay-ms",
        "0",
        "--request-receive-timeout-ms",
        "1000",
        "--log-level",
        "WARNING",
    )
    d.start()
    yield d
    d.stop()


def _proc_status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])  # kB
    raise KeyError(field)


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _valid_frames() -> list[bytes]:
    """Requests a client may send, on groups no well-behaved member uses."""
    bodies = [
        (ApiVersionsRequest(client_software_name="junk", client_software_version="0"), 3),
        (MetadataRequest(topics=None), 12),
        (HeartbeatRequest(group_id="garbage-1", generation_id=1, member_id="m"), 4),
        (
            JoinGroupRequest(
                group_id="garbage-2",
                session_timeout_ms=6000,
                rebalance_timeout_ms=1000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00" * 20)],
            ),
            9,
        ),
        (
            OffsetCommitRequest(
                group_id="garbage-3",
                topics=[
                    OffsetCommitRequestTopic(
                        name="t",
                        partitions=[
                            OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
                        ],
                    )
                ],
            ),
            8,
        ),
        (DescribeGroupsRequest(groups=["garbage-1"]), 5),
        (ListGroupsRequest(), 4),
    ]
    return [encode_request(body, version, 7) for body, version in bodies]


def _garbage(rng: random.Random, valid: list[bytes]) -> bytes:
    base = rng.choice(valid)
    kind = rng.randrange(5)
    if kind == 0:  # random bytes behind a plausible size
        body = rng.randbytes(rng.randrange(1, 200))
        return struct.pack(">i", len(body)) + body
    if kind == 1:  # truncated: the size promises more than is sent
        return base[: rng.randrange(1, len(base))]
    if kind == 2:  # oversized: refused on the size alone
        return struct.pack(">i", rng.choice([1 << 30, 0x7FFFFFFF, -5])) + b"\x00" * 8
    mutated = bytearray(base)
    for _ in range(rng.randrange(1, 6)):  # bit flips behind an intact size
        i = rng.randrange(4, len(mutated))
        mutated[i] ^= 1 << rng.randrange(8)
    return bytes(mutated)


async def _garbage_worker(port: int, rng: random.Random, valid: list[bytes], frames: int) -> None:
    sent = 0
    while sent < frames:
        batch = [_garbage(rng, valid) for _ in range(min(10, frames - sent))]
        sent += len(batch)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"".join(batch))
            try:
                while await asyncio.wait_for(reader.read(65536), 0.1):
                    pass
            except TimeoutError:
                pass
            writer.close()
        except (ConnectionError, OSError):
            continue


async def _well_behaved(port: int, groups: int, per_group: int) -> list[GroupMember]:
    pool = ConnectionPool()
    members = [
        GroupMember(
            f"127.0.0.1:{port}",
            f"good-{g}",
            protocols=["range"],
            topics=["t"],
            pool=pool,
            heartbeat_interval_ms=500,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
        )
        for g in range(groups)
        for _ in range(per_group)
    ]
    await asyncio.gather(*(m.start(None) for m in members))
    for _ in range(100):  # bounded: at most ~20 s
        if len({(m.group_id, m.generation_id) for m in members}) == groups and all(
            m._stable.is_set() for m in members
        ):
            break
        await asyncio.sleep(0.2)
    return members


def _identity(members: list[GroupMember]) -> list[tuple[str, str, int]]:
    return [(m.group_id, m.member_id, m.generation_id) for m in members]


def test_garbage_client_does_not_disturb_well_behaved_members(daemon: Daemon) -> None:
    assert daemon.proc is not None
    pid = daemon.proc.pid

    async def scenario() -> None:
        members = await _well_behaved(daemon.port, groups=20, per_group=10)
        before = _identity(members)
        assert len({(g, gen) for g, _m, gen in before}) == 20
        rng = random.Random(8)
        valid = _valid_frames()
        started = time.monotonic()
        per_worker = GARBAGE_FRAMES // GARBAGE_CONNECTIONS
        await asyncio.gather(
            *(
                _garbage_worker(daemon.port, random.Random(rng.random()), valid, per_worker)
                for _ in range(GARBAGE_CONNECTIONS)
            )
        )
        print(f"{GARBAGE_FRAMES} garbage frames in {time.monotonic() - started:.1f}s")
        await asyncio.sleep(1.5)  # a few more heartbeat rounds after the storm
        assert daemon.proc is not None and daemon.proc.poll() is None
        assert _identity(members) == before  # no expiry, no rebalance, no new member ids
        assert all(m._stable.is_set() for m in members)
        await asyncio.gather(*(m.close() for m in members))

    asyncio.run(scenario())
    peak_mb = _proc_status(pid, "VmHWM") / 1024
    print(f"daemon peak RSS {peak_mb:.0f} MB")
    assert peak_mb < RSS_BOUND_MB


def test_connection_storm_leaves_no_descriptors_or_memory_behind(daemon: Daemon) -> None:
    assert daemon.proc is not None
    pid = daemon.proc.pid
    hello = encode_request(ApiVersionsRequest(), 0, 1)

    async def one(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(hello)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        await reader.readexactly(size)
        writer.close()
        await writer.wait_closed()

    async def storm(connections: int) -> None:
        opened = [asyncio.open_connection("127.0.0.1", daemon.port) for _ in range(connections)]
        pairs = []
        for chunk in range(0, connections, 500):  # 5,000 open at once, opened 500 at a time
            pairs += await asyncio.gather(*opened[chunk : chunk + 500])
        for _r, w in pairs:
            w.write(hello)
        for r, _w in pairs:
            size = struct.unpack(">i", await r.readexactly(4))[0]
            await r.readexactly(size)
        for _r, w in pairs:
            w.close()
        await asyncio.gather(*(one(daemon.port) for _ in range(100)))

    def settle(check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not check():
            time.sleep(0.05)

    asyncio.run(storm(5000))  # warm-up: first-time allocations are not a leak
    settle(lambda: _fds(pid) < 50)
    fds, rss = _fds(pid), _proc_status(pid, "VmRSS")
    for _ in range(3):
        asyncio.run(storm(5000))
    settle(lambda: _fds(pid) <= fds)
    assert _fds(pid) <= fds
    grown_mb = (_proc_status(pid, "VmRSS") - rss) / 1024
    print(f"RSS after 3 more storms: {grown_mb:+.1f} MB")
    assert grown_mb < 20


def test_slow_clients_do_not_delay_heartbeats(tmp_path: Path) -> None:
    d = Daemon(tmp_path, *slow_clients.DAEMON_ARGS)
    d.start()
    try:
        latencies = slow_clients.probe_latencies(d.port, "probe", 3.0, attack=True)
    finally:
        d.stop()
    p99_ms = percentile_ms(latencies, 0.99)
    print(f"heartbeat p99 under attack: {p99_ms:.2f} ms over {len(latencies)} heartbeats")
    # The target, 10 ms, is measured by bench/slow_clients.py against a baseline; this bound
    # only catches a daemon that lets the attackers stall the loop (a blocked write holds
    # it for seconds), not a busy machine (79 ms seen beside another test worker at load 15).
    assert p99_ms < 500
