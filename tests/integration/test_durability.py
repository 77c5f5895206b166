"""A daemon process killed with SIGTERM or SIGKILL forgets nothing it acknowledged, whether
its store is SQLite or PostgreSQL (a real server the tests start)."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Callable

import pytest

from coordinator.client.connection import ConnectionClosed, connect
from tests.wire import Offsets, commit, fetch

from .conftest import KILL_CYCLES, Daemon

pytestmark = pytest.mark.integration

GROUPS = ["a", "b", "c"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The daemon's store options."""
    if request.param == "sqlite":
        return ()
    url = request.getfixturevalue("postgres").create_database(request.node.name)
    return ("--store", "postgres", "--database-url", url)


def _offsets(seed: int) -> dict[str, Offsets]:
    return {
        g: {("t", p): (seed * 1000 + i * 100 + p, f"{g}-{p}-{seed}") for p in range(50)}
        for i, g in enumerate(GROUPS)
    }


async def _commit_all(port: int, wanted: dict[str, Offsets]) -> None:
    c = await connect("127.0.0.1", port)
    await asyncio.gather(*(commit(c, g, offsets) for g, offsets in wanted.items()))
    c.close()


async def _fetch_all(port: int) -> dict[str, Offsets]:
    c = await connect("127.0.0.1", port)
    try:
        return {g: await fetch(c, g) for g in GROUPS}
    finally:
        c.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_offsets_of_three_groups_survive_the_daemon_being_stopped(
    start_daemon: Callable[..., Daemon], sig: int, store_args: tuple[str, ...]
) -> None:
    daemon = start_daemon("--topic", "t:50", *store_args)
    wanted = _offsets(1)
    asyncio.run(_commit_all(daemon.port, wanted))
    daemon.stop(sig)  # for SIGKILL: right after the last acknowledgement
    daemon.start()
    assert asyncio.run(_fetch_all(daemon.port)) == wanted


async def _write_until_killed(daemon: Daemon, partitions: int, rng: random.Random) -> list[int]:
    """Commit increasing offsets on every partition as fast as acknowledgements come back;
    SIGKILL the daemon at a random moment. Returns the last acknowledged offset per partition."""
    acked = [-1] * partitions
    c = await connect("127.0.0.1", daemon.port)
    first_ack = asyncio.Event()

    async def writer(p: int) -> None:
        offset = 0
        while True:
            offset += 1
            try:
                await commit(c, "crash", {("t", p): (offset, None)})
            except (ConnectionClosed, ConnectionError):
                return
            acked[p] = offset
            first_ack.set()

    writers = [asyncio.create_task(writer(p)) for p in range(partitions)]
    # The kill falls at a random moment of the writing, not of the set-up: the delay counts
    # from the first acknowledgement (under load the first commit of a restarted daemon
    # could take longer than the whole delay, and the cycle then tested nothing).
    await asyncio.wait_for(first_ack.wait(), 30)
    await asyncio.sleep(rng.uniform(0.05, 0.6))
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    await asyncio.wait_for(asyncio.gather(*writers), 10)
    c.close()
    return acked


def test_every_acknowledged_commit_survives_sigkill_at_a_random_moment(
    start_daemon: Callable[..., Daemon], store_args: tuple[str, ...]
) -> None:
    rng = random.Random(20261122)
    daemon = start_daemon("--topic", "t:8", *store_args)
    started = time.monotonic()
    for cycle in range(KILL_CYCLES):
        acked = asyncio.run(_write_until_killed(daemon, 8, rng))
        assert max(acked) > 0, f"cycle {cycle}: nothing was acknowledged"
        daemon.stop(signal.SIGKILL)  # reap it
        daemon.start()
        found = asyncio.run(_fetch_all_crash(daemon.port))
        for p, value in enumerate(acked):
            assert found.get(p, -1) >= value, (cycle, p, value, found.get(p))
    print(f"{KILL_CYCLES} kill/restart cycles in {time.monotonic() - started:.1f}s")


async def _fetch_all_crash(port: int) -> dict[int, int]:
    c = await connect("127.0.0.1", port)
    try:
        return {p: offset for (_t, p), (offset, _m) in (await fetch(c, "crash")).items()}
    finally:
        c.close()
