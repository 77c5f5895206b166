"""A group handed over alive (group/handover.py): when its coordinator stops (SIGTERM) in
the middle of a rebalance, unmodified kafka-python members carry on at the other node with
their member ids, the one that joined during the rebalance included (no UNKNOWN_MEMBER_ID),
and the rebalance ends when the absent member's session would have ended at the old owner,
not a whole session after the move."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.client.connection import connect
from tests.wire import describe

from .clients import KafkaPythonMember, Member
from .conftest import Daemon, wait_until
from .test_cluster import GROUPS, node_args, spread

pytestmark = pytest.mark.integration

SESSION_MS = 8000
#: How much of the absent member's session is left when its coordinator stops.
LEFT_AT_MOVE_S = 2.5


class Unknown(logging.Handler):
    """kafka-python's reports of an UNKNOWN_MEMBER_ID answer (JoinGroup, SyncGroup or
    Heartbeat), whatever member saw it."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if any(s in text for s in ("unknown member id", "not recognized", "UnknownMemberId")):
            self.seen.append(text)


def described(port: int, group: str) -> tuple[str, list[str]]:
    """(state, member ids) of ``group`` at the node listening on ``port``."""

    async def ask() -> tuple[str, list[str]]:
        c = await connect("127.0.0.1", port)
        try:
            g = (await describe(c, group)).groups[0]
            return g.group_state, [m.member_id for m in g.members]
        finally:
            c.close()

    return asyncio.run(ask())


def test_a_rebalance_in_progress_survives_a_sigterm_of_its_coordinator(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    url = postgres.create_database("handover")
    nodes = {n: start_daemon(*node_args(url, n)) for n in (1, 2)}
    owners = asyncio.run(spread(nodes))
    group = next(g for g in GROUPS if owners[g] == 1)
    bootstrap = ",".join(d.bootstrap for d in nodes.values())
    unknown = Unknown()
    kafka_log = logging.getLogger("kafka")
    kafka_log.addHandler(unknown)
    level = kafka_log.level
    kafka_log.setLevel(logging.INFO)
    members: list[Member] = []
    member = ["kafka-python", bootstrap, group, "t", "absent", str(SESSION_MS)]
    absent = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.member_process", *member],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        members += [
            KafkaPythonMember(bootstrap, group, "t", client_id=c, session_timeout_ms=SESSION_MS)
            for c in ("a", "b")
        ]

        def three_stable() -> bool:
            state, ids = described(nodes[1].port, group)
            return state == "Stable" and len(ids) == 3 and all(m.assigned for m in members)

        assert wait_until(three_stable, 30), described(nodes[1].port, group)
        absent.send_signal(signal.SIGKILL)  # no LeaveGroup: its session runs out at node 1
        absent.wait(10)
        killed = time.monotonic()
        members.append(
            KafkaPythonMember(bootstrap, group, "t", client_id="d", session_timeout_ms=SESSION_MS)
        )

        def d_joined() -> bool:
            state, ids = described(nodes[1].port, group)
            return state == "PreparingRebalance" and len(ids) == 4

        # d's join started a rebalance that waits for the absent member's session.
        assert wait_until(d_joined, SESSION_MS / 1000 - LEFT_AT_MOVE_S - 0.5)
        _, before = described(nodes[1].port, group)
        time.sleep(max(0.0, killed + SESSION_MS / 1000 - LEFT_AT_MOVE_S - time.monotonic()))
        moved = time.monotonic()
        nodes[1].stop(signal.SIGTERM)

        def stable_without_the_absent() -> bool:
            state, ids = described(nodes[2].port, group)
            return state == "Stable" and len(ids) == 3

        # A whole session from the move would keep the group waiting for the absent member
        # until SESSION_MS after it; with the hand-over it waits for what was left.
        assert wait_until(stable_without_the_absent, SESSION_MS / 1000 - 1), (
            described(nodes[2].port, group),
            [(m.client_id, m.error, m.errors) for m in members],
        )
        print(f"stable again at node 2 {time.monotonic() - moved:.2f}s after the SIGTERM")
        _, after = described(nodes[2].port, group)
        assert set(after) < set(before)  # the same ids, but for the absent member's
        assert wait_until(lambda: sum(len(m.assigned) for m in members) == 4, 10)
        assert unknown.seen == []
    finally:
        kafka_log.removeHandler(unknown)
        kafka_log.setLevel(level)
        if absent.poll() is None:
            absent.kill()
        for m in members:
            m.close()
