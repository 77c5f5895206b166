"""What a newcomer reads on the console is right (issue 33): the Overview counts each group
type apart, the Analysis page's hint is a command that exists, a KIP-848 group's page has
every field, a member whose heartbeats stopped is marked late, partitions keep their
colour across rebalances, and commits are counted rather than listed."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import re
import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from coordinator.client import GroupMember
from coordinator.commands import cli
from coordinator.console.liveness import classic_late_after_ms
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.shell.server import Server
from tests.coordinator.console.helpers import base_url, get_json, member, settings, started

FAST = ConsumerGroupConfig(heartbeat_interval_ms=100, min_heartbeat_interval_ms=50)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    s = settings(tmp_path)
    srv = await started(dataclasses.replace(s, group=dataclasses.replace(s.group, consumer=FAST)))
    yield srv
    await srv.stop()


@pytest.fixture
async def http(server: Server) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url(server)) as session:
        yield session


def consumer(srv: Server, group: str) -> GroupMember:
    return GroupMember(f"127.0.0.1:{srv.port}", group, topics=["orders"], group_protocol="consumer")


async def until(predicate: object, timeout_s: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def page(http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.text()


def overview_cells(text: str) -> dict[str, dict[str, int]]:
    """The "Groups by state and type" table as shown: type -> state -> count."""
    out: dict[str, dict[str, int]] = {}
    for kind, row in re.findall(r'<tr data-type="(\w+)">(.*?)</tr>', text, re.S):
        cells = re.findall(r'<td class="num" data-state="(\w+)"><a [^>]*>(\d+)</a></td>', row)
        out[kind] = {state: int(n) for state, n in cells}
    return out


@pytest.mark.integration  # group members heartbeating on real timers
async def test_the_overview_counts_each_group_type_in_its_own_row(
    server: Server, http: aiohttp.ClientSession
) -> None:
    classic = member(server, "old-style")
    a, b = consumer(server, "kip848"), consumer(server, "kip848")
    await asyncio.gather(classic.start(10), a.start(10), b.start(10))
    await until(
        lambda: len(a.assignment.get("orders", [])) + len(b.assignment.get("orders", [])) == 6
    )
    try:
        d = await get_json(http, "/api/overview")
        by = d["groups_by_type_and_state"]
        assert by["classic"]["Stable"] == 1 and by["consumer"]["Stable"] == 1
        assert sum(by["classic"].values()) == 1 and sum(by["consumer"].values()) == 1
        shown = overview_cells(await page(http, "/"))
        assert shown["classic"]["Stable"] == 1 and shown["consumer"]["Stable"] == 1
        assert sum(shown["classic"].values()) == 1 and sum(shown["consumer"].values()) == 1
        # Each count links to the groups it counts.
        for kind, group in (("classic", "old-style"), ("consumer", "kip848")):
            listed = await get_json(http, f"/api/groups?state=Stable&type={kind}")
            assert [g["id"] for g in listed["groups"]] == [group]
            assert f'href="/groups?state=Stable&amp;type={kind}"' in await page(http, "/")
    finally:
        await asyncio.gather(classic.close(), a.close(), b.close())


async def test_the_analysis_hint_names_commands_and_options_that_exist(
    http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    text = await page(http, "/analytics")
    analyze = html.unescape(re.search(r'<code id="analyze-command">(.*?)</code>', text).group(1))  # type: ignore[union-attr]
    option = html.unescape(re.search(r'<code id="analytics-option">(.*?)</code>', text).group(1))  # type: ignore[union-attr]
    journal, out = tmp_path / "journal", tmp_path / "out"
    journal.mkdir()
    words = [{"JOURNAL": str(journal), "OUT": str(out)}.get(w, w) for w in shlex.split(analyze)]
    assert words[:2] == ["group-coordinator", "analyze"]
    # click parses them as the command line would (an unknown option raises UsageError).
    command = cli.main.get_command(cli.main.make_context("group-coordinator", []), "analyze")
    assert command is not None
    with command.make_context("analyze", words[2:]) as ctx:
        assert ctx.params["out"] == str(out)
        assert ctx.params["journal_paths"] == (str(journal),)
    serve_args = [{"OUT": str(out)}.get(w, w) for w in shlex.split(option)]
    with cli.main.commands["serve"].make_context("serve", serve_args) as ctx:
        assert ctx.params["http_analytics"] == out


@pytest.mark.integration  # group members heartbeating on real timers
async def test_a_kip848_group_page_has_every_field(
    server: Server, http: aiohttp.ClientSession
) -> None:
    a = consumer(server, "kip848")
    await a.start(10)
    await until(lambda: len(a.assignment.get("orders", [])) == 6)
    b = consumer(server, "kip848")
    await b.start(10)
    await until(
        lambda: (
            len(a.assignment.get("orders", [])) + len(b.assignment.get("orders", [])) == 6
            and bool(b.assignment.get("orders"))
        )
    )
    try:

        async def settled() -> dict[str, object]:
            for _ in range(200):
                d = await get_json(http, "/api/groups/kip848")
                if d["state"] == "Stable" and d["rebalances"][0]["outcome"] == "Stable":
                    return d  # type: ignore[no-any-return]
                await asyncio.sleep(0.05)
            raise AssertionError(f"never settled: {d}")

        d = await settled()
        assert d["state_since_ms"] is not None
        newest = d["rebalances"][0]  # the second member's arrival
        assert newest["generation"] == d["generation"] and newest["members"] == 2
        assert newest["duration_ms"] is not None and newest["protocol"] == "uniform"
        text = await page(http, "/group?id=kip848")
        state_for = re.search(r'<dd id="group-state-for">(.*?)</dd>', text).group(1)  # type: ignore[union-attr]
        assert state_for != "-"
        timeline = re.search(r'<table id="timeline-table">(.*?)</table>', text, re.S).group(1)  # type: ignore[union-attr]
        assert "→ -" not in timeline  # the epoch it made is shown
        durations = re.findall(r'<td class="num rebalance-duration">(.*?)</td>', timeline)
        assert durations and all(x != "-" for x in durations)
        events = await page(http, "/")  # its events say what they did
        assert f"epoch {d['generation']}, 2 members, uniform: " in events
        assert f"{b.member_id} at epoch " in events
    finally:
        await asyncio.gather(a.close(), b.close())


@pytest.mark.integration  # waits for a real second without heartbeats
async def test_a_member_whose_heartbeats_stopped_is_marked_late(
    server: Server, http: aiohttp.ClientSession
) -> None:
    session_ms = 3000  # late after a third of it; removed after all of it
    quiet = GroupMember(
        f"127.0.0.1:{server.port}", "quiet", topics=["orders"],
        session_timeout_ms=session_ms, heartbeat_interval_ms=100,
    )  # fmt: skip
    await quiet.start(10)
    d = await get_json(http, "/api/groups/quiet")
    [m] = d["members"]
    assert m["heartbeat_late"] is False
    assert m["heartbeat_late_after_ms"] == classic_late_after_ms(session_ms) == 1000
    assert 'class="late"' not in await page(http, "/group?id=quiet")
    await quiet.close(leave=False)  # stops heartbeating, stays a member
    await asyncio.sleep(1.1)
    d = await get_json(http, "/api/groups/quiet")
    [m] = d["members"]  # still there: its session has not run out
    assert m["heartbeat_late"] is True and m["since_heartbeat_ms"] > 1000
    text = await page(http, "/group?id=quiet")
    assert f'<tr data-member="{m["member_id"]}" class="late">' in text
    assert "late: none for" in text and "expected within 1.0 s" in text


def partition_colours(text: str) -> dict[int, tuple[str, str]]:
    """The partition picture as drawn: partition -> (owner, fill)."""
    found = re.findall(
        r'<g class="partition" data-partition="(\d+)" data-owner="([^"]*)">'
        r'\s*<rect [^>]*fill="([^"]+)"',
        text,
    )
    return {int(p): (owner, fill) for p, owner, fill in found}


@pytest.mark.integration  # group members heartbeating on real timers
async def test_partitions_that_did_not_move_keep_their_colour(
    server: Server, http: aiohttp.ClientSession
) -> None:
    members = [member(server, "painted") for _ in range(3)]
    for m in members:  # one after the other: the first joined is listed first
        await m.start(10)
    for m in members:
        await m.wait_stable(10)
    await until(lambda: all(len(m.assignment.get("orders", [])) == 2 for m in members))
    before = partition_colours(await page(http, "/group?id=painted"))
    assert len(before) == 6 and len({fill for _o, fill in before.values()}) == 3
    first, rest = members[0], members[1:]
    await first.close()  # the first listed leaves: the others move up the list
    await until(lambda: all(len(m.assignment.get("orders", [])) == 3 for m in rest))
    d = await get_json(http, "/api/groups/painted")
    assert len(d["members"]) == 2
    after = partition_colours(await page(http, "/group?id=painted"))
    stayed = [p for p in after if after[p][0] == before[p][0]]
    assert stayed  # range assignment: some partition keeps its owner
    for p in stayed:
        assert after[p][1] == before[p][1], (p, before, after)
    assert len({fill for _o, fill in after.values()}) == 2
    await asyncio.gather(*(m.close() for m in rest))


@pytest.mark.integration  # group members heartbeating on real timers
async def test_commits_are_counted_not_listed_as_events(
    server: Server, http: aiohttp.ClientSession
) -> None:
    a = member(server, "committer")
    await a.start(10)
    for n in range(30):
        await a.commit({("orders", p): n for p in a.assignment["orders"]})
    d = await get_json(http, "/api/overview")
    assert d["commits_total"] == 30 * 6
    assert [e["type"] for e in d["recent_events"]].count("offsets_committed") == 0
    assert any(e["type"] == "rebalance_started" for e in d["recent_events"])
    group = await get_json(http, "/api/groups/committer")
    assert group["commits"] == 30 * 6 and group["last_commit_ms"] is not None
    text = await page(http, "/")
    assert re.search(r'<dd id="stat-commits-total">180</dd>', text)
    assert "offsets_committed" not in text
    assert '<dd id="group-commits">180' in await page(http, "/group?id=committer")
    await a.close()
