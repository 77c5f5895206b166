"""The console's JSON API shows groups formed by real clients as the coordinator sees them,
and follows them live over server-sent events."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from coordinator.console.settings import ConsoleSettings
from coordinator.shared.errors import StartupError
from coordinator.shell.server import Server
from coordinator.telemetry.settings import ObservabilitySettings
from tests.coordinator.console.helpers import (
    SESSION_MS,
    base_url,
    events,
    get_json,
    member,
    settings,
    simple_group,
    started,
)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await started(settings(tmp_path))
    yield srv
    await srv.stop()


@pytest.fixture
async def http(server: Server) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url(server)) as session:
        yield session


async def test_the_console_is_off_unless_asked_for(tmp_path: Path) -> None:
    s = settings(tmp_path)
    srv = await started(type(s)(listen=s.listen, store="memory", data_dir=tmp_path))
    try:
        assert srv.console is None
    finally:
        await srv.stop()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_a_group_shows_members_decoded_assignment_offsets_and_its_rebalances(
    server: Server, http: aiohttp.ClientSession
) -> None:
    a, b = member(server, "shop"), member(server, "shop")
    await a.start(10)
    await b.start(10)
    await a.wait_stable(10)
    await b.wait_stable(10)
    await a.commit({("orders", 0): 42})

    group = await get_json(http, "/api/groups/shop")
    assert (group["state"], group["type"], group["protocol_type"]) == (
        "Stable",
        "classic",
        "consumer",
    )
    assert group["generation"] == 2
    ids = {m["member_id"] for m in group["members"]}
    assert ids == {a.member_id, b.member_id}
    # Decoded from the consumer protocol: the six partitions, each owned once, as the
    # clients themselves were told.
    owners = {p["partition"]: p["owner"] for p in group["assignment"][0]["partitions"]}
    assert group["assignment"][0]["topic"] == "orders"
    assert sorted(owners) == list(range(6)) and set(owners.values()) == ids
    by_member = {m["member_id"]: m["assignment"] for m in group["members"]}
    assert by_member[a.member_id] == a.assignment
    assert by_member[b.member_id] == b.assignment
    assert all(m["session_timeout_ms"] == SESSION_MS for m in group["members"])
    assert all(m["since_heartbeat_ms"] is not None for m in group["members"])
    [offset] = group["offsets"]
    assert (offset["topic"], offset["partition"], offset["offset"]) == ("orders", 0, 42)
    assert offset["commit_ms"] is not None
    # The timeline, newest first: the second member's join, then the first's.
    second, first = group["rebalances"]
    assert (first["trigger"], first["from_generation"], first["generation"]) == (
        "new_member",
        0,
        1,
    )
    assert b.member_id in second["reason"] and second["generation"] == 2
    assert second["members"] == 2 and second["outcome"] == "Stable"
    assert second["join_ms"] is not None and second["sync_ms"] is not None
    assert set(group["time_in_states_ms"]) >= {"PreparingRebalance", "Stable"}

    overview = await get_json(http, "/api/overview")
    assert overview["groups"] == 1 and overview["members"] == 2
    assert overview["groups_by_state"]["Stable"] == 1
    assert overview["groups_by_type"] == {"classic": 1, "consumer": 0}
    assert overview["rebalances_last_hour"] == 2
    assert overview["commits_per_second"] > 0
    assert overview["nodes"][0]["this"] is True

    topics = {t["name"]: t for t in (await get_json(http, "/api/topics"))["topics"]}
    assert topics["orders"]["subscribed_groups"] == ["shop"]
    assert topics["orders"]["committed_groups"] == ["shop"]
    assert topics["payments"]["subscribed_groups"] == []

    await b.close()  # leaves: a rebalance with its reason
    await a.wait_stable(10)
    group = await get_json(http, "/api/groups/shop")
    assert [m["member_id"] for m in group["members"]] == [a.member_id]
    assert group["rebalances"][0]["trigger"] == "member_left"
    kinds = [e["type"] for e in (await get_json(http, "/api/events?limit=50"))["events"]]
    assert "member_left" in kinds and "offsets_committed" not in kinds  # counted instead
    await a.close()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_groups_are_searched_sorted_and_paginated_on_the_server(
    server: Server, http: aiohttp.ClientSession
) -> None:
    for n in range(120):
        simple_group(server, f"batch-{n:03d}")
    simple_group(server, "other")
    a = member(server, "live-one")
    await a.start(10)

    page = await get_json(http, "/api/groups?page_size=50")
    assert (page["total"], page["pages"], len(page["groups"])) == (122, 3, 50)
    assert page["groups"][0]["id"] == "batch-000"
    assert {
        "id",
        "type",
        "state",
        "protocol",
        "members",
        "generation",
        "last_rebalance",
        "rebalances_1h",
    } <= set(page["groups"][0])

    found = await get_json(http, "/api/groups?q=BATCH-11&sort=id&order=desc")
    assert [g["id"] for g in found["groups"]] == [f"batch-11{n}" for n in range(9, -1, -1)]

    last = await get_json(http, "/api/groups?q=batch&page=3&page_size=50")
    assert [g["id"] for g in last["groups"]] == [f"batch-{n:03d}" for n in range(100, 120)]
    beyond = await get_json(http, "/api/groups?q=batch&page=99&page_size=50")
    assert beyond["page"] == 3  # clamped to the last page

    busiest = await get_json(http, "/api/groups?sort=members&order=desc&page_size=1")
    assert busiest["groups"][0]["id"] == "live-one"
    assert busiest["groups"][0]["last_rebalance"]["trigger"] == "new_member"
    recent = await get_json(http, "/api/groups?sort=last_rebalance&order=desc&page_size=1")
    assert recent["groups"][0]["id"] == "live-one"

    stable = await get_json(http, "/api/groups?state=stable")
    assert [g["id"] for g in stable["groups"]] == ["live-one"]
    await get_json(http, "/api/groups/no-such-group", status=404)
    await a.close()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_a_stream_pushes_each_change_without_asking(
    server: Server, http: aiohttp.ClientSession
) -> None:
    a, b = member(server, "watched"), member(server, "watched")
    await a.start(10)
    await b.start(10)
    await a.wait_stable(10)
    async with http.get("/api/stream?view=group&id=watched") as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        updates = events(resp)
        first = await asyncio.wait_for(anext(updates), 5)
        assert len(first["members"]) == 2

        await a.commit({("orders", 1): 7})

        async def until(check: object) -> dict[str, object]:
            while True:
                update = await asyncio.wait_for(anext(updates), 5)
                if check(update):  # type: ignore[operator]
                    return update  # type: ignore[no-any-return]

        committed = await until(lambda u: u["offsets"])
        assert committed["offsets"][0]["offset"] == 7
        await b.close()
        left = await until(lambda u: len(u["members"]) == 1 and u["state"] == "Stable")
        assert left["rebalances"][0]["trigger"] == "member_left"
        assert server.console is not None and server.console.streams == 1
    # The page is gone: its stream stops polling (found at its next turn).
    for _ in range(40):
        if server.console.streams == 0:
            break
        await asyncio.sleep(0.05)
    assert server.console.streams == 0
    await a.close()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_pages_render_and_load_only_the_daemons_assets(
    server: Server, http: aiohttp.ClientSession
) -> None:
    a = member(server, "paged")
    await a.start(10)
    for path in ("/", "/groups", "/group?id=paged", "/topics"):
        async with http.get(path) as resp:
            assert resp.status == 200
            html = await resp.text()
            assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        assert "http://" not in html and "https://" not in html  # no CDN, nothing remote
        assert 'src="/static/console.js"' in html
    for asset in ("/static/console.js", "/static/console.css", "/static/favicon.svg"):
        async with http.get(asset) as resp:
            assert resp.status == 200
    async with http.get("/group?id=paged") as resp:
        html = await resp.text()
    assert a.member_id in html and "Rebalance timeline" in html
    async with http.get("/group?id=nobody") as resp:
        assert resp.status == 404
    await a.close()


async def test_a_console_port_in_use_stops_the_start_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = dataclasses.replace(
            settings(tmp_path), console=ConsoleSettings(listen=("127.0.0.1", port))
        )
        srv = Server(s)
        with pytest.raises(
            StartupError, match=f"cannot listen on 127.0.0.1:{port} \\(--http-listen\\)"
        ):
            await srv.start()
        await srv.stop()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_prometheus_metrics_are_also_on_the_console_port(tmp_path: Path) -> None:
    s = dataclasses.replace(
        settings(tmp_path), observability=ObservabilitySettings(metrics_listen=("127.0.0.1", 0))
    )
    srv = await started(s)
    try:
        a = member(srv, "metered")
        await a.start(10)
        async with aiohttp.ClientSession(base_url(srv)) as http, http.get("/metrics") as resp:
            assert resp.status == 200
            text = await resp.text()
        assert 'group_coordinator_groups{state="Stable"} 1.0' in text
        assert 'group_coordinator_rebalances_total{trigger="new_member"}' in text
        await a.close()
    finally:
        await srv.stop()


async def test_without_metrics_the_console_says_how_to_turn_them_on(
    http: aiohttp.ClientSession,
) -> None:
    async with http.get("/metrics") as resp:
        assert resp.status == 404 and "--metrics-listen" in await resp.text()
