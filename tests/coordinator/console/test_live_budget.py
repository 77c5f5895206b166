"""Live pages share one budget of the event loop, and one client cannot take every
live-page slot."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp

from coordinator.console.streams import RenderBudget
from coordinator.shell.server import Server
from tests.coordinator.console.helpers import base_url, settings, simple_group, started

RENDER_S = 0.02


def busy_render() -> str:
    """A page's render: it holds the loop for RENDER_S."""
    end = time.perf_counter() + RENDER_S
    while time.perf_counter() < end:
        pass
    return "page"


async def test_many_pages_wanting_to_render_at_once_hold_the_loop_one_render_at_a_time() -> None:
    """Between two renders the loop always runs other work (a member's heartbeat): the
    renders are never run back to back. Checked by order, not by a clock, so a loaded
    machine cannot fail it."""
    budget = RenderBudget(share=0.5)
    trace: list[str] = []

    def render() -> str:
        trace.append("render")
        return busy_render()

    started_at = time.perf_counter()
    renders = [asyncio.ensure_future(budget.render(render)) for _ in range(20)]
    while not all(r.done() for r in renders):
        trace.append("other work")
        await asyncio.sleep(0)
    assert budget.renders == 20
    back_to_back = [i for i in range(1, len(trace)) if trace[i - 1] == trace[i] == "render"]
    assert not back_to_back, trace
    # Together they took half of the loop at most: 20 renders spread over 0.8 s or more.
    assert time.perf_counter() - started_at >= 20 * RENDER_S / 0.5 * 0.9


async def test_one_client_cannot_take_every_live_page_slot(tmp_path: Path) -> None:
    s = settings(tmp_path)
    console = dataclasses.replace(
        s.console, max_streams=4, max_streams_per_client=2, trusted_proxies=("127.0.0.1",)
    )
    srv: Server = await started(dataclasses.replace(s, console=console))
    try:
        simple_group(srv, "g")
        async with aiohttp.ClientSession(base_url(srv)) as http, AsyncExitStack() as held:
            statuses = []
            for address in ("203.0.113.1",) * 3 + ("203.0.113.2",) * 2 + ("203.0.113.3",):
                resp = await held.enter_async_context(
                    http.get("/api/stream?view=groups", headers={"X-Forwarded-For": address})
                )
                statuses.append(resp.status)
            # The first client's third page is refused; another client still gets two;
            # past the total, everyone is refused.
            assert statuses == [200, 200, 429, 200, 200, 503]
    finally:
        await srv.stop()


async def test_pages_showing_the_same_thing_share_one_render() -> None:
    budget = RenderBudget(share=0.5)
    loop = asyncio.get_running_loop()
    asked_at = loop.time()
    made = []

    def render(view: str) -> str:
        made.append(view)
        return busy_render() + view

    pages = [
        budget.render(lambda v=view: render(v), key=view, newer_than=asked_at)  # type: ignore[misc]
        for view in ("groups", "overview") * 10
    ]
    results = await asyncio.gather(*pages)
    assert sorted(made) == ["groups", "overview"]  # two renders for twenty pages
    assert [r for r, _ in results] == ["pagegroups", "pageoverview"] * 10
    # A page that saw a change after that render gets a new one.
    later = loop.time()
    await budget.render(lambda: render("groups"), key="groups", newer_than=later)
    assert made.count("groups") == 2
