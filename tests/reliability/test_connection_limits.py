"""Connection limits: each one cuts off only the client that hits it."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.group.config import GroupConfig
from coordinator.settings.config import Settings
from coordinator.settings.limits import ConnectionLimits
from coordinator.shell.server import Server
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.metadata import MetadataRequest
from protocol.errors import ErrorCode
from protocol.frames import encode_request

LIMITS = ConnectionLimits(
    max_connections=50,
    max_connections_per_ip=20,
    connections_max_idle_ms=1500,
    request_receive_timeout_ms=500,
    max_buffered_response_bytes=64 * 1024,
    slow_reader_timeout_ms=500,
)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            data_dir=tmp_path,
            topics=(("t", 3),),
            group=GroupConfig(initial_rebalance_delay_ms=0),
            limits=LIMITS,
        )
    )
    await srv.start()
    yield srv
    await srv.stop()


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> float | None:
    """Seconds until the server closed the connection, or None if it stayed open."""
    start = time.monotonic()
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), seconds)
            if not chunk:
                return time.monotonic() - start
    except (TimeoutError, ConnectionResetError):
        return None if time.monotonic() - start >= seconds else time.monotonic() - start


async def _alive(c: KafkaConnectionClient) -> bool:
    resp = await asyncio.wait_for(c.request(ApiVersionsRequest(), 0), 2)
    return bool(resp.error_code == ErrorCode.NONE)


async def test_connections_over_the_per_ip_limit_are_closed_at_once(server: Server) -> None:
    held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(20)]
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    assert await _closed_within(reader, 2) is not None
    assert server.guard.refused["max_connections_per_ip"] == 1
    writer.close()
    # A slot frees up when one of the 20 goes away.
    held.pop()[1].close()
    await asyncio.sleep(0.1)
    c = await connect("127.0.0.1", server.port)
    assert await _alive(c)
    c.close()
    for _r, w in held:
        w.close()


async def test_connections_over_the_total_limit_are_closed_whatever_their_address(
    server: Server,
) -> None:
    # 127.0.0.0/8 is all loopback: 50 connections from three addresses fill the node
    # without any address reaching its own limit of 20.
    held = [
        await asyncio.open_connection("127.0.0.1", server.port, local_addr=(f"127.0.0.{ip}", 0))
        for ip, count in ((2, 20), (3, 20), (4, 10))
        for _ in range(count)
    ]
    await asyncio.sleep(0.1)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, local_addr=("127.0.0.5", 0)
    )
    assert await _closed_within(reader, 2) is not None
    assert server.guard.refused["max_connections"] == 1
    assert server.guard.refused["max_connections_per_ip"] == 0
    writer.close()
    held.pop()[1].close()
    await asyncio.sleep(0.1)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, local_addr=("127.0.0.5", 0)
    )
    assert await _closed_within(reader, 0.5) is None  # room again: it stays open
    writer.close()
    for _r, w in held:
        w.close()


async def test_slow_loris_is_dropped_at_the_receive_deadline(server: Server) -> None:
    healthy = await connect("127.0.0.1", server.port)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    frame = encode_request(MetadataRequest(topics=None), 12, 1)
    started = time.monotonic()

    async def trickle() -> None:
        for byte in frame:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)  # the whole request would take ~1.5 s

    task = asyncio.create_task(trickle())
    elapsed = await _closed_within(reader, 3)
    task.cancel()
    assert elapsed is not None
    assert 0.45 <= time.monotonic() - started <= 1.5  # 500 ms deadline, swept every 50 ms
    assert server.guard.refused["request_receive_timeout"] == 1
    assert await _alive(healthy)
    healthy.close()
    writer.close()


async def test_client_that_never_reads_is_throttled_then_dropped(server: Server) -> None:
    healthy = await connect("127.0.0.1", server.port)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    frame = encode_request(MetadataRequest(topics=None), 12, 1)
    # Pipeline requests and never read: the server stops reading once its send buffer for
    # this client is full, then drops the client after the slow-reader timeout.
    writer.transport.pause_reading()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20  # bounded; typically well under a second
    while time.monotonic() < deadline and not server.guard.refused["slow_reader_timeout"]:
        if writer.transport.get_write_buffer_size() < 1 << 20:
            writer.write(frame * 1000)
        assert await _alive(healthy)  # answered throughout
        await asyncio.sleep(0.01)
    conns = [(c.paused, c.write_blocked_since, len(c.queue), c.busy) for c in server.connections]
    assert server.guard.refused["slow_reader_timeout"] == 1, (server.guard.refused, conns)
    await asyncio.sleep(0.05)
    assert len(server.connections) == 1  # dropped at once, its unsent responses discarded
    assert await _alive(healthy)
    healthy.close()
    writer.close()
    del reader


async def test_create_topics_beyond_the_catalog_limits_is_a_policy_violation(
    tmp_path: Path,
) -> None:
    from protocol.apis.create_topics import (
        CreateTopicsRequest,
        CreateTopicsRequestCreatableTopic,
        CreateTopicsResponse,
    )

    srv = Server(
        Settings(listen=("127.0.0.1", 0), data_dir=tmp_path, topics=(("t", 3),), max_partitions=10)
    )
    await srv.start()
    c = await connect("127.0.0.1", srv.port)

    async def create(name: str, partitions: int) -> int:
        topic = CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1
        )
        resp = await c.request(
            CreateTopicsRequest(topics=[topic], timeout_ms=1000), 7, CreateTopicsResponse
        )
        return int(resp.topics[0].error_code)

    assert await create("big", 8) == ErrorCode.POLICY_VIOLATION  # 3 + 8 > 10
    assert await create("fits", 7) == ErrorCode.NONE
    assert await create("one-more", 1) == ErrorCode.POLICY_VIOLATION
    c.close()
    await srv.stop()
