"""The console's Analysis page shows what the last `analyze` wrote (its summary.json), only
the groups the viewer may see, and says how to get one when there is none."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import aiohttp

from coordinator.console.settings import ConsoleSettings
from tests.coordinator.console.helpers import base_url, get_json, settings, started

SUMMARY = {
    "generated_ms": 1_795_600_000_000,
    "totals": {"groups": 2, "rebalances": 11, "storms": 1},
    "top_groups": [
        {"rank": 1, "group": "flappy", "rebalances": 9,
         "story": "client `etl-7` on host h3 joined and left 8 times in 20 s"},
        {"rank": 2, "group": "calm", "rebalances": 2, "story": "2 rebalances"},
    ],
    "storms": [{"group": "flappy", "kind": "flap", "start": "2026-11-25 09:00:00",
                "end": "2026-11-25 09:00:20", "rebalances": 9}],
}  # fmt: skip


async def test_the_analysis_page_shows_the_last_summary(tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "summary.json").write_text(json.dumps(SUMMARY))
    s = settings(tmp_path)
    srv = await started(
        dataclasses.replace(s, console=ConsoleSettings(("127.0.0.1", 0), analytics=report))
    )
    try:
        async with aiohttp.ClientSession(base_url(srv)) as http:
            d = await get_json(http, "/api/analytics")
            assert d["found"] and d["totals"]["rebalances"] == 11
            assert [g["group"] for g in d["top_groups"]] == ["flappy", "calm"]
            assert d["storms"][0]["kind"] == "flap"
            async with http.get("/analytics") as page:
                html = await page.text()
            assert page.status == 200
            assert "joined and left 8 times" in html and "flap" in html
    finally:
        await srv.stop()


async def test_without_an_analysis_the_page_says_how_to_get_one(tmp_path: Path) -> None:
    srv = await started(settings(tmp_path))
    try:
        async with aiohttp.ClientSession(base_url(srv)) as http:
            assert await get_json(http, "/api/analytics") == {"configured": False, "found": False}
            async with http.get("/analytics") as page:
                assert "--http-analytics" in await page.text()
    finally:
        await srv.stop()
