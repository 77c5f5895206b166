"""How long classic groups wait for their first assignment when their members start while
a new cluster's nodes still spread the coordinator partitions between them.

Three nodes started side by side (``campaign.py``'s short timers); as soon
as the first one listens, ``--groups`` groups of two of the project's own members
(``coordinator/client``, 10 s session and rebalance timeouts) each start within the next
second, so some join a node in the instant it hands their partition over. Printed per
run: the slowest member's time to its first assignment, and how many took over 5 s. Each
run uses a new database.

Before the fix of the hand-over (a pending id whose MEMBER_ID_REQUIRED answer the release
had failed was handed over, and the next owner's join phase waited for it) 2 of 8 runs
had groups waiting 10.05-10.28 s, a rebalance timeout; after it none of 10 (at most
1.8 s). It depends on a write being in flight as a partition moves: not every run has one.

Usage: ``python -m tests.chaos.spread_join [--runs N] [--groups N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from coordinator.client.member import GroupMember
from coordinator.client.pool import ConnectionPool
from tests.chaos.campaign import QUICK, node_args
from tests.integration.conftest import Daemon
from tests.postgres_server import PostgresServer, postgres_server

SLOW_S = 5.0


async def one_run(pg: PostgresServer, root: Path, groups: int) -> list[float]:
    """Seconds from each member's start to its first assignment."""
    url = pg.create_database("spread")
    nodes = []
    for n in (1, 2, 3):
        (root / f"n{n}").mkdir()
        # At INFO (campaign.py's nodes log at WARNING): each rebalance's events are logged,
        # which widens the moment a group's write is in flight when its partition moves.
        args = [*node_args(url, n, QUICK), "--log-level", "INFO"]
        nodes.append(Daemon(root / f"n{n}", *args))
    starts = [asyncio.ensure_future(asyncio.to_thread(d.start)) for d in nodes]
    try:
        await asyncio.wait(starts, return_when=asyncio.FIRST_COMPLETED)
        pool = ConnectionPool()
        bootstrap = [d.bootstrap for d in nodes]  # one listening suffices
        delays = {f"g-{i}": random.uniform(0, 1.0) for i in range(groups)}
        members = [
            GroupMember(
                bootstrap,
                group,
                protocols=["range"],
                topics=["t"],
                pool=pool,
                heartbeat_interval_ms=300,
                session_timeout_ms=10000,
                rebalance_timeout_ms=10000,
                request_timeout_ms=2000,
            )
            for group in delays
            for _ in "ab"
        ]

        async def first_assignment(m: GroupMember) -> float:
            await asyncio.sleep(delays[m.group_id])
            started = time.monotonic()
            await m.start(60)
            return time.monotonic() - started

        waits = await asyncio.gather(*(first_assignment(m) for m in members))
        await asyncio.gather(*starts)
        await asyncio.gather(*(m.close() for m in members))
        return list(waits)
    finally:
        await asyncio.gather(*starts, return_exceptions=True)
        for d in nodes:
            d.stop()


async def run(runs: int, groups: int) -> None:
    with postgres_server() as pg:
        for n in range(runs):
            root = Path(tempfile.mkdtemp(prefix="spread-join-"))
            waits = await one_run(pg, root, groups)
            slow = sum(w > SLOW_S for w in waits)
            print(f"run {n}: slowest {max(waits):.2f} s, {slow} of {len(waits)} over {SLOW_S} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--groups", type=int, default=24)
    args = parser.parse_args()
    asyncio.run(run(args.runs, args.groups))


if __name__ == "__main__":
    main()
