"""A client's own strings cannot forge the console's live stream: a client id (or group
id) carrying bare CRs stays inside the one event it belongs to, for every viewer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from coordinator.client.member import GroupMember
from coordinator.console import sse
from coordinator.shell.server import Server
from tests.coordinator.console.helpers import (
    base_url,
    browser_events,
    settings,
    simple_group,
    started,
)

FORGED = "All groups healthy. Nothing to do here."
#: What the attack trial sent: a CR-only "blank line", then an event of its own.
ATTACK = f"x\r\revent: update\rdata: {FORGED}\r\r"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await started(settings(tmp_path))
    yield srv
    await srv.stop()


async def first_events(http: aiohttp.ClientSession, path: str) -> list[tuple[str, str]]:
    """The events of a stream up to and including its first update, as a browser parses
    them."""
    raw = ""
    async with http.get(path) as resp:
        async for chunk in resp.content.iter_any():
            raw += chunk.decode()
            if raw.endswith("\n\n") and "event: update" in raw:
                return browser_events(raw)
    raise AssertionError(f"the stream ended: {raw!r}")


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_every_line_ending_form_becomes_its_own_data_line(ending: str) -> None:
    payload = f"<p>one{ending}{ending}event: update{ending}data: {FORGED}{ending}{ending}</p>"
    events = browser_events(sse.event("update", payload).decode())
    assert len(events) == 1
    name, data = events[0]
    assert name == "update" and FORGED in data and data.startswith("<p>one")


@pytest.mark.integration  # group members heartbeating on real timers
async def test_a_client_id_with_bare_crs_does_not_forge_the_group_page(server: Server) -> None:
    attacker = GroupMember(
        f"127.0.0.1:{server.port}", "shop", topics=["orders"], client_id=ATTACK
    )  # the client id every request header of this client carries
    await attacker.start(10)
    try:
        await attacker.wait_stable(10)
        async with aiohttp.ClientSession(base_url(server)) as http:
            events = await first_events(http, "/api/stream?view=group&id=shop&format=html")
    finally:
        await attacker.close()
    updates = [data for name, data in events if name == "update"]
    assert len(updates) == 1, events
    assert "member" in updates[0] and updates[0] != FORGED


async def test_a_group_id_with_bare_crs_does_not_forge_the_groups_page(server: Server) -> None:
    simple_group(server, ATTACK)  # OffsetCommit accepts any group id but "", as Kafka does
    async with aiohttp.ClientSession(base_url(server)) as http:
        events = await first_events(http, "/api/stream?view=groups&format=html")
    updates = [data for name, data in events if name == "update"]
    assert len(updates) == 1, events
    assert "groups-table" in updates[0] and updates[0] != FORGED
