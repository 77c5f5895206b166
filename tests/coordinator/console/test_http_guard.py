"""Slow or numerous HTTP clients cannot hold the console's port, nor starve the Kafka
listener of descriptors: header and idle timeouts, a connection cap, a descriptor reserve,
each logged when hit."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from coordinator.client.connection import connect
from coordinator.console import guard
from coordinator.console.settings import ConsoleSettings
from coordinator.shell.server import Server
from coordinator.telemetry.settings import ObservabilitySettings
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from tests.coordinator.console.helpers import settings, started


def with_console(tmp_path: Path, **limits: object) -> object:
    s = settings(tmp_path)
    return dataclasses.replace(
        s,
        console=ConsoleSettings(listen=("127.0.0.1", 0), **limits),  # type: ignore[arg-type]
    )


async def open_raw(srv: Server) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    assert srv.console is not None and srv.console.port is not None
    return await asyncio.open_connection("127.0.0.1", srv.console.port)


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closed the connection (EOF or reset) within ``seconds``."""
    try:
        while await asyncio.wait_for(reader.read(4096), seconds):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


async def kafka_answers(srv: Server) -> bool:
    client = await connect("127.0.0.1", srv.port)
    try:
        resp = await asyncio.wait_for(
            client.request(
                ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                3,
                ApiVersionsResponse,
            ),
            5,
        )
        return resp.error_code == 0
    finally:
        client.close()


def hits(logs: list[dict[str, object]], limit: str) -> int:
    return sum(
        int(str(e["closed"]))
        for e in logs
        if e.get("event") == "console connection limit hit" and e.get("limit") == limit
    )


async def test_headers_that_never_finish_are_cut_off_and_logged(tmp_path: Path) -> None:
    srv = await started(with_console(tmp_path, header_timeout_ms=300))  # type: ignore[arg-type]
    try:
        with capture_logs() as logs:
            trickling, t_writer = await open_raw(srv)
            t_writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            silent, s_writer = await open_raw(srv)  # sends nothing at all
            started_at = time.monotonic()
            assert await closed_within(trickling, 5)
            assert await closed_within(silent, 5)
            assert time.monotonic() - started_at < 3
            await srv.console.guard.close()  # type: ignore[union-attr]  # flushes the log
        assert hits(logs, "http_header_timeout_ms") == 2
        for w in (t_writer, s_writer):
            w.close()
    finally:
        await srv.stop()


async def test_a_live_stream_is_not_an_idle_connection(tmp_path: Path) -> None:
    srv = await started(
        with_console(tmp_path, header_timeout_ms=200, idle_timeout_ms=300)  # type: ignore[arg-type]
    )
    try:
        reader, writer = await open_raw(srv)
        writer.write(b"GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert await reader.readuntil(b"\r\n\r\n")  # the response's headers
        assert not await closed_within(reader, 1.0)
        writer.close()
        # A keep-alive connection after its response is idle: closed.
        reader, writer = await open_raw(srv)
        writer.write(b"GET /static/favicon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        assert await closed_within(reader, 5)
        writer.close()
    finally:
        await srv.stop()


async def test_past_the_cap_connections_are_closed_at_once_and_kafka_still_answers(
    tmp_path: Path,
) -> None:
    s = with_console(tmp_path, max_connections=5)
    metrics_on = ObservabilitySettings(metrics_listen=("127.0.0.1", 0))
    srv = await started(dataclasses.replace(s, observability=metrics_on))  # type: ignore[type-var]
    try:
        with capture_logs() as logs:
            held = [await open_raw(srv) for _ in range(5)]
            extra = [await open_raw(srv) for _ in range(3)]
            for reader, _ in extra:
                assert await closed_within(reader, 2)
            assert not await closed_within(held[0][0], 0.3)
            assert await kafka_answers(srv)
            await srv.console.guard.close()  # type: ignore[union-attr]
        assert hits(logs, "http_max_connections") == 3
        assert srv.runtime is not None and srv.runtime.metrics is not None
        counted = srv.runtime.metrics.registry.get_sample_value(
            "group_coordinator_limit_hits_total", {"limit": "http_max_connections"}
        )
        assert counted == 3
        for _, w in held + extra:
            w.close()
    finally:
        await srv.stop()


async def test_the_console_leaves_descriptors_to_the_kafka_listener(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A descriptor limit of 100 with 96 kept for Kafka: the console may hold 4 connections.
    monkeypatch.setattr(guard, "descriptor_limit", lambda: 100)
    with capture_logs() as logs:
        srv = await started(with_console(tmp_path, fd_reserve=96))  # type: ignore[arg-type]
    try:
        assert srv.console is not None and srv.console.guard.cap == 4
        assert any(e["event"] == "console connections capped by the descriptor limit" for e in logs)
        held = [await open_raw(srv) for _ in range(4)]
        reader, writer = await open_raw(srv)
        assert await closed_within(reader, 2)
        for _, w in [*held, (reader, writer)]:
            w.close()
    finally:
        await srv.stop()
