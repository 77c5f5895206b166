"""The README's quickstart consumer, run exactly as written (taken from README.md), against a
real daemon: it joins, commits, and leaves its group at once on Enter, on Ctrl-C and on
kill (a member that does not leave holds the group for its 45 s session, and the next run
of the snippet waits that long for partitions); with no input at all (nohup, a CI step) it
stays until told to stop."""

from __future__ import annotations

import asyncio
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from coordinator.client import GroupAdmin

from .conftest import Daemon, wait_until

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
QUICKSTART_BOOTSTRAP = "127.0.0.1:9092"
SESSION_S = 45  # kafka-python's default session.timeout.ms: what a member that never left costs
LEFT_WITHIN_S = 10  # far below the session: only a LeaveGroup empties the group this soon


def quickstart_consumer() -> str:
    """The Python of the README's `.venv/bin/python -c '...'` consumer."""
    [code] = re.findall(r"^\.venv/bin/python -c '\n(.*?)'\n```", README.read_text(), re.M | re.S)
    assert 'group_id="quickstart"' in code and QUICKSTART_BOOTSTRAP in code
    return code


class Snippet:
    def __init__(self, code: str, bootstrap: str, stdin: int = subprocess.PIPE) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code.replace(QUICKSTART_BOOTSTRAP, bootstrap)],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            # faulthandler: a snippet that hangs is aborted with every thread's stack shown.
            env={"PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", "PATH": "/usr/bin:/bin"},
        )
        self.lines: list[str] = []

    def wait_for(self, prefix: str, timeout: float) -> str:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sel.select(timeout=0.2):
                line = self.proc.stdout.readline()
                if not line:
                    break  # exited
                self.lines.append(line)
                if line.startswith(prefix):
                    return line
        raise AssertionError(f"no {prefix!r} in {self.lines}; stderr: {self.stderr()}")

    def stderr(self) -> str:
        """What it printed on stderr; a snippet still running is aborted first, so its
        threads' stacks are there (what it hangs on)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def group(daemon: Daemon) -> tuple[str, int, int]:
    """The group's state, members and committed partitions, as the coordinator has them."""

    async def ask() -> tuple[str, int, int]:
        async with GroupAdmin(daemon.bootstrap, request_timeout_s=5) as admin:
            described = await admin.describe_group("quickstart")
            committed = await admin.committed_offsets("quickstart")
        return described.state, len(described.members), len(committed)

    return asyncio.run(ask())


@pytest.mark.parametrize("leave", ["Enter", "Ctrl-C"])
def test_the_readme_consumer_joins_commits_and_leaves_at_once(
    start_daemon: Callable[..., Daemon], leave: str
) -> None:
    daemon = start_daemon("--topic", "demo:6", "--group-initial-rebalance-delay-ms", "0")
    code = quickstart_consumer()
    first = Snippet(code, daemon.bootstrap)
    try:
        assigned = first.wait_for("assigned", 30)
        assert assigned.strip() == "assigned [0, 1, 2, 3, 4, 5]"
        # kafka-python commits its positions every 5 s while it polls.
        assert wait_until(lambda: group(daemon)[2] == 6, 15, interval=0.5), group(daemon)
        assert group(daemon)[:2] == ("Stable", 1)
        asked = time.monotonic()
        if leave == "Enter":
            assert first.proc.stdin is not None
            first.proc.stdin.write("\n")
            first.proc.stdin.flush()
        else:
            first.proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert first.wait_for("left the group", LEFT_WITHIN_S)
        assert first.proc.wait(LEFT_WITHIN_S) == 0, first.stderr()
        assert group(daemon)[:2] == ("Empty", 0)
        took = time.monotonic() - asked
        assert took < LEFT_WITHIN_S < SESSION_S
        assert "Traceback" not in first.stderr()
        # Run again: the group is free, so partitions come without waiting out a session.
        again = Snippet(code, daemon.bootstrap)
        try:
            assert again.wait_for("assigned", LEFT_WITHIN_S).strip() == assigned.strip()
        finally:
            again.kill()
    finally:
        first.kill()


def test_the_readme_consumer_without_a_terminal_stays_until_killed(
    start_daemon: Callable[..., Daemon],
) -> None:
    """The end of input is not an Enter: under nohup or in a CI step it keeps its
    partitions, and a kill (SIGTERM) makes it leave the group."""
    daemon = start_daemon("--topic", "demo:6", "--group-initial-rebalance-delay-ms", "0")
    snippet = Snippet(quickstart_consumer(), daemon.bootstrap, stdin=subprocess.DEVNULL)
    try:
        assert snippet.wait_for("assigned", 30).strip() == "assigned [0, 1, 2, 3, 4, 5]"
        time.sleep(2)  # many polls past the end of its input
        assert snippet.proc.poll() is None, snippet.lines
        assert group(daemon)[:2] == ("Stable", 1)
        snippet.proc.send_signal(signal.SIGTERM)
        assert snippet.wait_for("left the group", LEFT_WITHIN_S)
        assert snippet.proc.wait(LEFT_WITHIN_S) == 0, snippet.stderr()
        assert group(daemon)[:2] == ("Empty", 0)
    finally:
        snippet.kill()
