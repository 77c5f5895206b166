"""Chaos: the daemon is SIGKILLed while 50 groups rebalance and commit, then restarted. Every
group comes back Stable with its members, and no acknowledged commit is lost."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.client.admin import GroupAdmin
from coordinator.client.member import GroupMember
from coordinator.client.pool import ConnectionPool
from tests.integration.conftest import Daemon

pytestmark = pytest.mark.integration

GROUPS = 50


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(
        tmp_path,
        "--topic",
        "t:4",
        "--group-initial-rebalance-delay-ms",
        "0",
        "--log-level",
        "WARNING",
    )
    d.start()
    yield d
    d.stop()


def _member(bootstrap: str, group: str, pool: ConnectionPool) -> GroupMember:
    return GroupMember(
        bootstrap,
        group,
        protocols=["range"],
        topics=["t"],
        pool=pool,
        heartbeat_interval_ms=300,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
    )


async def _committer(member: GroupMember, acked: dict[str, int], stop: asyncio.Event) -> None:
    offset = 0
    while not stop.is_set():
        offset += 1
        try:
            await member.commit({("t", 0): offset})
            acked[member.group_id] = offset
        except Exception:  # rebalancing, coordinator gone: the test only counts acks
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.005)


async def _all_stable(admin: GroupAdmin, members: list[GroupMember]) -> bool:
    for g in range(GROUPS):
        try:
            d = await admin.describe_group(f"chaos-{g}")
        except Exception:
            return False
        if d.state != "Stable" or len(d.members) != 3:
            return False
    return all(m._stable.is_set() for m in members)


def test_groups_recover_and_no_acknowledged_commit_is_lost_after_sigkill(
    daemon: Daemon,
) -> None:
    rng = random.Random(2026)

    async def scenario() -> None:
        pool = ConnectionPool()
        first = [_member(daemon.bootstrap, f"chaos-{g}", pool) for g in range(GROUPS) for _ in "ab"]
        await asyncio.gather(*(m.start(30) for m in first))
        acked: dict[str, int] = {}
        stop = asyncio.Event()
        leaders = [m for m in first if m.is_leader]
        committers = [asyncio.create_task(_committer(m, acked, stop)) for m in leaders]
        for _ in range(100):  # bounded: until every group has an acknowledged commit
            if len(acked) == GROUPS:
                break
            await asyncio.sleep(0.05)
        # A third member per group: 50 rebalances in flight when the kill comes.
        third = [_member(daemon.bootstrap, f"chaos-{g}", pool) for g in range(GROUPS)]
        await asyncio.gather(*(m.start(None) for m in third))
        await asyncio.sleep(rng.uniform(0.0, 0.2))
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(10)
        acked_at_kill = dict(acked)
        daemon.start()
        killed_at = time.monotonic()
        members = first + third
        async with GroupAdmin(daemon.bootstrap) as admin:
            for _ in range(150):  # bounded: at most ~45 s
                if await _all_stable(admin, members):
                    break
                await asyncio.sleep(0.3)
            assert await _all_stable(admin, members)
        print(f"{GROUPS} groups Stable {time.monotonic() - killed_at:.1f}s after the restart")
        stop.set()
        for task in committers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        survivors = {m.group_id: m for m in members}
        for g, offset in acked_at_kill.items():
            found = await survivors[g].fetch_offsets([("t", 0)])
            assert found[("t", 0)].offset >= offset, (g, offset, found)
        assert len(acked_at_kill) == GROUPS  # every group had commits acknowledged
        await asyncio.gather(*(m.close() for m in members))
        await pool.close()

    asyncio.run(scenario())
