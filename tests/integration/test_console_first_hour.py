"""What a new user reads on the console about a KIP-848 group, in a real browser (Debian's
chromium, driven by Playwright) against a real daemon and real KIP-848 members (issue 42):
its timeline names who joined and has no row that made no epoch, its members show their
target assignment, commits read as offsets, the time in the current state agrees with the
state table, the Overview gives each type its own states, and the Analysis page shows the
report's `names` as code, not backticks."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.client.consumer_member import ConsumerGroupMember

from .browser import chromium
from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration

TOPIC = "t6"
SHOWN_MS = 10_000
STORY = "client `etl-7` on host h3 joined and left 8 times in 19 s (median lifetime 1.5 s)"


class Kip848Members:
    """The project's KIP-848 members, on an event loop of their own in a thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.members: list[ConsumerGroupMember] = []

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def join(self, bootstrap: str, group: str) -> ConsumerGroupMember:
        async def start() -> ConsumerGroupMember:
            m = ConsumerGroupMember(bootstrap, group, [TOPIC], client_id="first-hour")
            await m.start()
            return m

        member: ConsumerGroupMember = self.run(start())
        self.members.append(member)
        return member

    def close(self) -> None:
        for m in self.members:
            self.run(m.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def kip848() -> Iterator[Kip848Members]:
    members = Kip848Members()
    yield members
    members.close()


def in_ms(text: str) -> float:
    """A duration as the console writes it ("850 ms", "5.2 s", "1.7 min", "2.0 h")."""
    value, unit = text.split()
    return float(value) * {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}[unit]


def test_a_kip848_group_reads_right_in_the_browser(
    start_daemon: Callable[..., Daemon], kip848: Kip848Members, tmp_path: Path
) -> None:
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    summary = {"generated_ms": 1_767_225_600_000, "totals": {"groups": 1, "rebalances": 16},
               "top_groups": [{"rank": 1, "group": "flappy", "rebalances": 16, "story": STORY}],
               "storms": []}  # fmt: skip
    (analysis / "summary.json").write_text(json.dumps(summary))
    port = free_port()
    daemon = start_daemon(
        "--topic", f"{TOPIC}:6", "--group-initial-rebalance-delay-ms", "0",
        "--group-consumer-min-heartbeat-interval-ms", "500",
        "--group-consumer-heartbeat-interval-ms", "500",
        "--http-listen", f"127.0.0.1:{port}", "--http-analytics", str(analysis),
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/static/favicon.svg", timeout=1):
                return True
        except OSError:
            return False

    assert wait_until(up, 10), daemon.log()[-2000:]
    a = kip848.join(daemon.bootstrap, "kip")
    b = kip848.join(daemon.bootstrap, "kip")
    assert wait_until(lambda: len(a.assignment.get(TOPIC, [])) == 3, 30)
    assert wait_until(lambda: len(b.assignment.get(TOPIC, [])) == 3, 30)
    kip848.run(a.commit({(TOPIC, p): 7 for p in a.assignment[TOPIC]}))

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/group?id=kip")
        page.wait_for_function(
            "() => document.querySelector('#group-state').innerText.includes('Stable')",
            timeout=SHOWN_MS,
        )
        rows = page.locator("tr.rebalance").all_inner_texts()
        # Each join names its member; no row made no epoch and was "restarted".
        assert any(b.member_id in r and "new member" in r for r in rows), rows
        assert not [r for r in rows if "→ -" in r and "restarted" in r], rows
        # The members' target assignment, as groups describe shows it.
        headers = page.locator("#members-table thead th").all_inner_texts()
        assert "Target assignment" in headers
        targets = page.locator("#members-table td.target").all_inner_texts()
        assert len(targets) == 2 and all(t.startswith(f"{TOPIC}: ") for t in targets), targets
        # Commits read as offsets of partitions, not as a count of partitions.
        tile = page.locator("#group-commits").inner_text()
        assert tile.startswith("3 partition offsets"), tile
        assert page.get_by_text("Offsets committed").count() == 1
        # The time in this state and the state table agree.
        state_for = in_ms(page.locator("#group-state-for").inner_text())
        table = dict(
            row.split("\t") for row in page.locator("#states-table tbody tr").all_inner_texts()
        )
        assert in_ms(table["Stable"]) >= state_for, (state_for, table)

        overview = browser.new_page(viewport={"width": 1280, "height": 900})
        overview.goto(f"{base}/")
        consumer = overview.locator('tr[data-type="consumer"]')
        classic = overview.locator('tr[data-type="classic"]')
        for state in ("Assigning", "Reconciling", "Stable", "Empty"):
            assert consumer.locator(f'td[data-state="{state}"] a').count() == 1, state
            assert classic.locator(f'td[data-state="{state}"] a').count() == (
                state in ("Stable", "Empty")
            ), state
        for state in ("PreparingRebalance", "CompletingRebalance"):
            assert consumer.locator(f'td[data-state="{state}"]').inner_text() == "-"
            assert classic.locator(f'td[data-state="{state}"] a').count() == 1
        assert consumer.locator('td[data-state="Stable"]').inner_text() == "1"
        assert "Partition offsets committed" in overview.locator("dl.tiles").inner_text()

        report = browser.new_page()
        report.goto(f"{base}/analytics")
        story = report.locator('#analysis-top-groups tr[data-group="flappy"] td.story')
        assert story.locator("code").inner_text() == "etl-7"
        assert "`" not in story.inner_text()
        assert re.search(r"client etl-7 on host h3 joined and left 8 times", story.inner_text())
