"""KIP-848 consumer groups in the console: listed with their type, state and group epoch,
and a group's page shows members with their epochs, what they own and the offsets."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from coordinator.client import GroupMember
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


def consumer(srv: Server, group: str) -> GroupMember:
    return GroupMember(f"127.0.0.1:{srv.port}", group, topics=["orders"], group_protocol="consumer")


async def until(predicate: object, timeout_s: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.integration  # group members heartbeating on real timers
async def test_consumer_groups_are_listed_beside_classic_ones_and_described(
    server: Server,
) -> None:
    a, b = consumer(server, "kip848"), consumer(server, "kip848")
    classic = member(server, "old-style")
    await asyncio.gather(a.start(10), b.start(10), classic.start(10))
    await until(
        lambda: len(a.assignment.get("orders", [])) + len(b.assignment.get("orders", [])) == 6
    )
    await a.commit({("orders", p): 10 + p for p in a.assignment["orders"]})
    try:
        async with aiohttp.ClientSession(base_url(server)) as http:
            listed = await get_json(http, "/api/groups?sort=type")
            rows = {g["id"]: g for g in listed["groups"]}
            assert set(rows) == {"kip848", "old-style"}  # the offsets' holder is not listed apart
            row = rows["kip848"]
            assert (row["type"], row["state"], row["members"]) == ("consumer", "Stable", 2)
            assert (row["protocol_type"], row["protocol"]) == ("consumer", "uniform")
            assert row["generation"] >= 2  # the group epoch: two joins
            assert rows["old-style"]["type"] == "classic"

            overview = await get_json(http, "/api/overview")
            assert overview["groups_by_type"] == {"classic": 1, "consumer": 1}
            assert overview["groups"] == 2 and overview["members"] == 3

            d = await get_json(http, "/api/groups/kip848")
            assert d["type"] == "consumer" and d["generation"] == row["generation"]
            owned = {m["member_id"]: m for m in d["members"]}
            assert set(owned) == {a.member_id, b.member_id}
            for m in owned.values():
                assert m["epoch"] == d["assignment_epoch"] and m["reconciliation"] == "stable"
                assert m["since_heartbeat_ms"] is not None and m["since_heartbeat_ms"] < 5000
            assert owned[a.member_id]["assignment"] == a.assignment
            picture = {p["partition"]: p["owner"] for p in d["assignment"][0]["partitions"]}
            assert set(picture.values()) == {a.member_id, b.member_id}
            assert {(o["partition"], o["offset"]) for o in d["offsets"]} == {
                (p, 10 + p) for p in a.assignment["orders"]
            }

            async with http.get("/group?id=kip848") as page:
                html = await page.text()
            assert page.status == 200 and "Group epoch" in html and "epoch " in html
    finally:
        await asyncio.gather(a.close(), b.close(), classic.close())
