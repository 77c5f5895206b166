"""The web console in a real browser (Debian's chromium, driven by Playwright) against a
real daemon and real Kafka clients: what happens to a group appears without a reload, the
actions work only with --http-admin, and the browser asks nothing of anyone but the daemon."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .browser import chromium
from .clients import LIBRARIES, Member
from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration

TOPIC = "t6"
#: How long the page has to show a change (the daemon pushes within a quarter second).
SHOWN_MS = 10_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium for the module's tests (a launch takes seconds); each page a test opens
    has a browser context of its own (``new_page``): no cookies or storage are shared."""
    with chromium() as b:
        yield b


def console_daemon(start_daemon: Callable[..., Daemon], *extra: str) -> tuple[Daemon, str]:
    port = free_port()
    daemon = start_daemon(
        "--topic",
        f"{TOPIC}:6",
        "--group-initial-rebalance-delay-ms",
        "0",
        "--http-listen",
        f"127.0.0.1:{port}",
        *extra,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/static/favicon.svg", timeout=1):
                return True
        except OSError:
            return False

    assert wait_until(up, 10), daemon.log()[-2000:]
    return daemon, base


def members(daemon: Daemon, group: str, n: int) -> list[Member]:
    cls = LIBRARIES["confluent-kafka"]
    return [cls(daemon.bootstrap, group, TOPIC, client_id=f"console-{i}") for i in range(n)]


#: Script errors and Content-Security-Policy violations the pages reported (a refused
#: action's 403 or a missing group's 404 is not one: "Failed to load resource" is left out).
PAGE_ERRORS: list[str] = []


@pytest.fixture(autouse=True)
def no_page_errors() -> Iterator[None]:
    PAGE_ERRORS.clear()
    yield
    assert PAGE_ERRORS == []


def _console_message(message: Any) -> None:
    if message.type == "error" and not message.text.startswith("Failed to load resource"):
        PAGE_ERRORS.append(message.text)


def open_page(browser: Any, url: str, requests: list[str]) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", _console_message)
    page.on("pageerror", lambda error: PAGE_ERRORS.append(str(error)))
    page.goto(url)
    # Set once: a reload would lose it, so its survival proves the page never reloaded.
    page.evaluate("window.__loadedOnce = true")
    return page


def still_the_same_page(page: Any) -> bool:
    return bool(page.evaluate("window.__loadedOnce === true"))


def test_a_commit_a_member_leaving_and_the_rebalance_appear_live(
    start_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path
) -> None:
    daemon, base = console_daemon(start_daemon)
    group = members(daemon, "live-app", 3)
    requests: list[str] = []
    try:
        assert wait_until(lambda: all(len(m.assigned) == 2 for m in group), 30)
        overview = open_page(browser, f"{base}/", requests)
        overview.wait_for_function(
            "() => document.querySelector('#stat-members').innerText === '3'", timeout=SHOWN_MS
        )
        assert "offsets_committed" not in overview.locator("table.events").inner_text()
        page = open_page(browser, f"{base}/group?id=live-app", requests)
        rows = page.locator("#members-table tbody tr[data-member]")
        rows.first.wait_for()
        page.wait_for_function(
            "() => document.querySelectorAll('#members-table tr[data-member]').length === 3",
            timeout=SHOWN_MS,
        )
        assert page.locator("#live-status").inner_text() == "live"
        # Six partitions in the picture, each coloured by one of the three owners.
        owners = page.locator("g.partition").evaluate_all("gs => gs.map(g => g.dataset.owner)")
        assert len(owners) == 6 and len(set(owners)) == 3
        rebalances_before = page.locator("tr.rebalance").count()
        page.screenshot(path=str(tmp_path / "group-formed.png"), full_page=True)

        group[0].commit({(TOPIC, 0): 11})
        page.locator('tr[data-offset="t6-0"]').wait_for(timeout=SHOWN_MS)
        assert "11" in page.locator('tr[data-offset="t6-0"]').inner_text()

        leaving = group.pop()
        leaving.close()  # LeaveGroup: a rebalance with its reason
        page.wait_for_function(
            "() => document.querySelectorAll('#members-table tr[data-member]').length === 2",
            timeout=SHOWN_MS,
        )
        page.wait_for_function(
            f"() => document.querySelectorAll('tr.rebalance').length > {rebalances_before}"
            " && document.querySelector('tr.rebalance').innerText.includes('member_left')",
            timeout=SHOWN_MS,
        )
        page.wait_for_function(
            "() => document.querySelector('#group-state').innerText.includes('Stable')",
            timeout=SHOWN_MS,
        )
        assert still_the_same_page(page)
        page.screenshot(path=str(tmp_path / "group-after-leave.png"), full_page=True)

        # Without --http-admin: no action buttons, and the API refuses the action.
        assert page.locator("button[data-action]").count() == 0
        status = page.evaluate(
            """() => fetch('/api/actions/delete-group', {method: 'POST',
                 headers: {'Content-Type': 'application/json'},
                 body: JSON.stringify({group: 'live-app'})}).then(r => r.status)"""
        )
        assert status == 403

        # The overview, open all along, followed too: members, rebalances and commits.
        overview.wait_for_function(
            "() => document.querySelector('#stat-members').innerText === '2'", timeout=SHOWN_MS
        )
        # Commits are counted, not listed (they would push the rebalances out of view).
        overview.wait_for_function(
            "() => document.querySelector('#stat-commits-total').innerText !== '0'",
            timeout=SHOWN_MS,
        )
        assert "offsets_committed" not in overview.locator("table.events").inner_text()
        assert overview.locator("#stat-rebalances").inner_text() != "0"
        assert still_the_same_page(overview)
        assert overview.locator("figure.chart svg rect.bar").count() == 60
        overview.screenshot(path=str(tmp_path / "overview.png"), full_page=True)

        groups = open_page(browser, f"{base}/groups", requests)
        groups.locator('tr[data-group="live-app"]').wait_for()
        extra = members(daemon, "second-app", 1)  # a new group shows up without a reload
        try:
            groups.locator('tr[data-group="second-app"]').wait_for(timeout=SHOWN_MS)
            # The search narrows the table live (typing, no submit, no reload).
            groups.get_by_label("Search group ids").fill("second")
            groups.wait_for_function(
                "() => document.querySelectorAll('#groups-table tr[data-group]').length === 1",
                timeout=SHOWN_MS,
            )
            assert still_the_same_page(groups)
            groups.screenshot(path=str(tmp_path / "groups.png"), full_page=True)
        finally:
            for m in extra:
                m.close()
    finally:
        for m in group:
            m.close()
    # Every request the browser made went to the daemon's console, nowhere else.
    assert requests and all(url.startswith(f"{base}/") for url in requests), requests


def test_admin_actions_in_the_browser(
    start_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path
) -> None:
    daemon, base = console_daemon(start_daemon, "--http-admin")
    [consumer] = members(daemon, "done-app", 1)
    try:
        assert wait_until(lambda: len(consumer.assigned) == 6, 30)
        consumer.commit({(TOPIC, 3): 5})
    finally:
        consumer.close()
    requests: list[str] = []
    page = open_page(browser, f"{base}/group?id=done-app", requests)
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations
    page.wait_for_function(
        "() => document.querySelector('#group-state').innerText.includes('Empty')", timeout=SHOWN_MS
    )
    assert "5" in page.locator('tr[data-offset="t6-3"]').inner_text()

    page.get_by_role("button", name="Reset to earliest").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#offsets-table tr[data-offset]').length === 6",
        timeout=SHOWN_MS,
    )
    assert page.locator('tr[data-offset="t6-3"] td').nth(2).inner_text() == "0"
    page.screenshot(path=str(tmp_path / "group-reset.png"), full_page=True)

    page.get_by_role("button", name="Delete this group").click()
    page.wait_for_function(
        "() => document.querySelector('#live-status').innerText.includes('gone')", timeout=SHOWN_MS
    )
    assert page.locator("#action-result").inner_text().startswith("Done")
    assert still_the_same_page(page)
    assert all(url.startswith(f"{base}/") for url in requests), requests


#: WCAG's contrast of every element's own text against the background it is drawn on.
CONTRAST_JS = """() => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const worst = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || el.offsetParent === null) continue;
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) worst.push([el.tagName, el.textContent.trim().slice(0, 30), ratio.toFixed(2)]);
  }
  return worst;
}"""

UNLABELLED_JS = """() => [...document.querySelectorAll('input:not([type=hidden]), select, button')]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                  && !el.textContent.trim())
  .map((el) => el.outerHTML)"""


def test_pages_are_labelled_readable_and_work_with_the_keyboard(
    start_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path
) -> None:
    daemon, base = console_daemon(start_daemon, "--http-admin")
    group = members(daemon, "keyboard-app", 1)
    try:
        assert wait_until(lambda: len(group[0].assigned) == 6, 30)
        group[0].commit({(TOPIC, 1): 3})
        requests: list[str] = []
        for path in ("/", "/groups", "/group?id=keyboard-app", "/topics"):
            page = open_page(browser, base + path, requests)
            page.locator("#live").wait_for()
            assert page.evaluate(UNLABELLED_JS) == [], path
            assert page.evaluate(CONTRAST_JS) == [], path
            page.close()

        page = open_page(browser, f"{base}/groups", requests)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip"
        for _ in range(10):  # to the search box, by the keyboard alone
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.id") == "q":
                break
        assert page.evaluate("document.activeElement.id") == "q"
        page.keyboard.type("keyboard")
        page.wait_for_function(
            "() => document.querySelector('#groups-count').innerText.startsWith('1 group')",
            timeout=SHOWN_MS,
        )
        members_header = page.locator("#groups-table thead a", has_text="Members")
        members_header.focus()
        page.keyboard.press("Enter")  # sorts, without a reload
        page.wait_for_function(
            "() => [...document.querySelectorAll('#groups-table th[aria-sort]')]"
            ".some((th) => th.innerText.startsWith('Members'))",
            timeout=SHOWN_MS,
        )
        # The live update kept the focus on the header the user pressed.
        assert page.evaluate("document.activeElement.innerText").startswith("Members")
        assert still_the_same_page(page)
        page.screenshot(path=str(tmp_path / "groups-keyboard.png"), full_page=True)
    finally:
        for m in group:
            m.close()


def cli(data_dir: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "coordinator.commands.cli", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        check=True,
        timeout=60,
    )


def test_with_acls_the_browser_logs_in_and_sees_and_does_only_what_the_user_may(
    start_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()  # the commands make no data directory
    cli(data, "users", "add", "alice", "--password", "alice-pw-3", "--mechanism", "SCRAM-SHA-256")
    # The consumers connect in plain text, as User:ANONYMOUS; alice reads her groups only.
    cli(data, "acls", "add", "--principal", "User:ANONYMOUS", "--operation", "read",
        "--group", "*")  # fmt: skip
    cli(data, "acls", "add", "--principal", "User:*", "--operation", "read", "--topic", TOPIC)
    cli(data, "acls", "add", "--principal", "User:alice", "--operation", "read",
        "--group", "alice-", "--pattern-type", "prefixed")  # fmt: skip
    daemon, base = console_daemon(start_daemon, "--acls-enabled", "--http-admin")
    for name in ("alice-app", "other-app"):
        [consumer] = members(daemon, name, 1)
        try:
            assert wait_until(lambda c=consumer: len(c.assigned) == 6, 30)  # type: ignore[misc]
            consumer.commit({(TOPIC, 0): 4})
        finally:
            consumer.close()

    requests: list[str] = []
    page = open_page(browser, f"{base}/groups", requests)
    assert page.url.startswith(f"{base}/login")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    assert "wrong user name or password" in page.get_by_role("alert").inner_text()
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("alice-pw-3")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/groups")
    page.locator('tr[data-group="alice-app"]').wait_for(timeout=SHOWN_MS)
    assert page.locator("#groups-table tr[data-group]").count() == 1  # not other-app
    assert "User:alice" in page.locator("header").inner_text()

    page.goto(f"{base}/group?id=alice-app")
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete this group").click()
    page.wait_for_function(
        "() => document.querySelector('#action-result').innerText.startsWith('Refused')",
        timeout=SHOWN_MS,
    )
    assert "User:alice may not DELETE group" in page.locator("#action-result").inner_text()
    page.get_by_role("button", name="Reset to earliest").click()  # READ is enough for this
    page.wait_for_function(
        "() => document.querySelector('#action-result').innerText.startsWith('Done')",
        timeout=SHOWN_MS,
    )
    page.wait_for_function(
        "() => document.querySelectorAll('#offsets-table tr[data-offset]').length === 6",
        timeout=SHOWN_MS,
    )
    page.screenshot(path=str(tmp_path / "group-as-alice.png"), full_page=True)
    page.goto(f"{base}/group?id=other-app")
    assert "404" in page.title() or "no group" in page.content()
    assert all(url.startswith(f"{base}/") for url in requests), requests


#: What a hostile client puts in its client id: a CR-only blank line, then its own event.
FORGED = "All groups healthy. Nothing to do here."
FORGING_CLIENT_ID = f"x\r\revent: update\rdata: {FORGED}\r\r"


def test_a_client_id_with_bare_crs_cannot_change_what_the_pages_show(
    start_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path
) -> None:
    daemon, base = console_daemon(start_daemon)
    requests: list[str] = []
    group_page = open_page(browser, f"{base}/group?id=forged-app", requests)
    overview = open_page(browser, f"{base}/", requests)
    # kafka-python sends the client id as given, as a hostile client would.
    attacker = LIBRARIES["kafka-python"](
        daemon.bootstrap, "forged-app", TOPIC, client_id=FORGING_CLIENT_ID
    )
    try:
        assert wait_until(lambda: len(attacker.assigned) == 6, 30)
        group_page.reload()  # the group exists now; its live page follows the member
        group_page.locator("#members-table tr[data-member]").wait_for(timeout=SHOWN_MS)
        attacker.commit({(TOPIC, 2): 7})  # more updates, each carrying the client id
        group_page.locator('tr[data-offset="t6-2"]').wait_for(timeout=SHOWN_MS)
        overview.wait_for_function(
            "() => document.querySelector('#stat-members').innerText === '1'", timeout=SHOWN_MS
        )
        # Each update still shows the page (the id itself is shown, escaped, in its cell).
        for page, part in ((group_page, "#members-table"), (overview, "#stat-members")):
            assert page.locator("#live").inner_text().strip() != FORGED
            assert page.locator(part).count() == 1
        assert still_the_same_page(overview)
        group_page.screenshot(path=str(tmp_path / "group-forging-client.png"), full_page=True)
    finally:
        attacker.close()
