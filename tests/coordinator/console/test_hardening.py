"""The console's smaller defences: redirects stay on the site, every answer carries the
security headers and names no library version, a 404 echoes nothing, /metrics asks for a
login with ACLs, and a malformed request is one quiet line, not a traceback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from coordinator.group.requests import JoinGroupInput
from coordinator.handlers.outcome import Pending
from coordinator.shell.server import Server
from tests.coordinator.console.helpers import base_url, get_json, settings, simple_group, started
from tests.coordinator.console.test_actions import acl_server

TRICKS = ("/\t/evil.example/x", "/\\evil.example/x", "//evil.example", "https://evil.example/")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await started(settings(tmp_path))
    yield srv
    await srv.stop()


@pytest.mark.parametrize("target", TRICKS)
async def test_a_login_never_redirects_to_another_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        async with (
            aiohttp.ClientSession(base_url(srv)) as http,
            http.post(
                "/login",
                data={"username": "alice", "password": "alice-secret", "next": target},
                allow_redirects=False,
            ) as resp,
        ):
            assert resp.status == 303 and resp.headers["Location"] == "/"
    finally:
        await srv.stop()


async def test_redirects_and_errors_carry_the_security_headers_and_no_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        async with aiohttp.ClientSession(base_url(srv)) as http:
            for path, status in (("/groups", 303), ("/nowhere", 404), ("/api/groups", 401)):
                async with http.get(path, allow_redirects=False) as resp:
                    assert resp.status == status, path
                    assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
                    assert resp.headers["X-Content-Type-Options"] == "nosniff"
                    assert resp.headers["Server"] == "group-coordinator", path
    finally:
        await srv.stop()


async def test_a_missing_group_page_does_not_echo_the_id(server: Server) -> None:
    async with (
        aiohttp.ClientSession(base_url(server)) as http,
        http.get("/group", params={"id": "<b>injected-text</b>"}) as resp,
    ):
        assert resp.status == 404
        assert "injected-text" not in await resp.text()
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]


async def test_metrics_on_the_console_port_ask_for_a_login_with_acls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        for user, status in (("alice", 403), ("root", 404)):
            async with aiohttp.ClientSession(
                base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)
            ) as http:
                async with http.get("/metrics", allow_redirects=False) as resp:
                    assert resp.status == 401
                async with http.post(
                    "/login", data={"username": user, "password": f"{user}-secret"}
                ):
                    pass
                # alice may not describe the cluster (metrics count every group); root may,
                # and is told metrics are off (no --metrics-listen).
                async with http.get("/metrics") as resp:
                    assert resp.status == status, user
    finally:
        await srv.stop()


async def test_a_malformed_request_is_not_logged_with_a_traceback(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    assert server.console is not None and server.console.port is not None
    caplog.set_level(logging.DEBUG, logger="aiohttp.server")
    for _ in range(3):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.console.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n")
        answer = await reader.read()
        assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request")
        assert b"aiohttp" not in answer
        writer.close()
    assert [r for r in caplog.records if r.exc_info] == []


async def test_a_restricted_user_sees_overview_figures_of_their_groups_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        simple_group(srv, "alice-app")
        rebalance(srv, "bob-app")  # a rebalance alice may not know of
        seen = {}
        for user in ("alice", "root"):
            async with aiohttp.ClientSession(
                base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)
            ) as http:
                async with http.post(
                    "/login", data={"username": user, "password": f"{user}-secret"}
                ):
                    pass
                seen[user] = await get_json(http, "/api/overview")
                async with http.get("/") as resp:
                    assert resp.status == 200  # the page renders the hidden figures too
        alice, root = seen["alice"], seen["root"]
        assert (alice["groups"], root["groups"]) == (1, 2)
        assert (alice["rebalances_last_hour"], root["rebalances_last_hour"]) == (0, 1)
        assert sum(m["count"] for m in alice["rebalances_per_minute"]) == 0
        assert alice["connections"] is None and root["connections"] is not None
        assert alice["commits_per_second"] is None and alice["commits_total"] is None
        assert [n["groups"] for n in alice["nodes"]] == [None]
        assert [n["groups"] for n in root["nodes"]] == [2]
    finally:
        await srv.stop()


def rebalance(srv: Server, group: str) -> None:
    """A member joins ``group`` through the state machine: a rebalance starts."""
    runtime = srv.runtime
    assert runtime is not None
    join = JoinGroupInput(
        group, "", None, "t", "/127.0.0.1", 30_000, 30_000, "consumer", [("range", b"")], 3
    )
    runtime.apply(runtime.groups.join_group(Pending(), join, runtime.now_ms()))
