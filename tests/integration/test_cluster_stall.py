"""No node can stall the others: a node stopped (SIGSTOP) or cut off from the database
(its connection frozen by a proxy, nothing closed) while it is inside a write transaction
holding locks never costs another node's groups an answer, its own groups are served
elsewhere within its lease and a little, and what it was writing is never stored nor
acknowledged after its lease ran out."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from coordinator.client.connection import connect
from protocol.errors import ErrorCode
from tests.faultproxy import FaultProxy

from .conftest import Daemon
from .test_cluster import GROUPS, LEASE_MS, _simple_commit, coordinator_of, node_args, spread

pytestmark = pytest.mark.integration

STALL_S = LEASE_MS / 1000 * 2.5


@pytest.mark.parametrize("fault", ["sigstop", "frozen-connection"])
def test_a_node_stalled_mid_transaction_costs_the_other_nodes_groups_nothing(
    start_daemon: Callable[..., Daemon], postgres: Any, fault: str
) -> None:
    url = postgres.create_database("stall")
    proxy = FaultProxy(postgres.port)
    nodes = {1: start_daemon(*node_args(proxy.url(url), 1)), 2: start_daemon(*node_args(url, 2))}
    stalled = nodes[1]
    assert stalled.proc is not None

    def stall() -> None:
        if fault == "sigstop":
            stalled.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        else:
            proxy.freeze()

    async def scenario() -> tuple[float, list[int]]:
        owners = await spread(nodes)
        mine = next(g for g in GROUPS if owners[g] == 1)
        theirs = [g for g in GROUPS if owners[g] == 2]
        healthy = await connect("127.0.0.1", nodes[2].port)
        for g in theirs:
            assert await _simple_commit(healthy, g, 1) == {ErrorCode.NONE}
        victim = await connect("127.0.0.1", stalled.port)
        for offset in range(5):  # its statements are prepared: the next Bind is the fence
            assert await _simple_commit(victim, mine, offset) == {ErrorCode.NONE}
        proxy.arm(b"-- write", stall)  # stalls once the fence's share lock is held
        late = asyncio.create_task(_simple_commit(victim, mine, 666))
        began = time.monotonic()
        refusals: list[int] = []
        served_after = -1.0
        while time.monotonic() - began < STALL_S:
            for g in theirs:  # the healthy node's groups: answered, every time
                refusals += [e for e in await _simple_commit(healthy, g, 2) if e]
            if (
                served_after < 0
                and await coordinator_of(healthy, mine) == 2
                and await _simple_commit(healthy, mine, 7) == {ErrorCode.NONE}
            ):
                served_after = time.monotonic() - began
            await asyncio.sleep(0.1)
        if fault == "sigstop":
            stalled.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        else:
            proxy.thaw()
        # The stalled write is answered (if at all) with an error, never as done.
        with_answer = await asyncio.wait_for(asyncio.shield(late), 10)
        assert ErrorCode.NONE not in with_answer, with_answer
        victim.close()
        healthy.close()
        return served_after, refusals

    try:
        served_after, refusals = asyncio.run(scenario())
    finally:
        # The nodes stop while their database is still reachable: a node whose connections
        # the closed proxy left hanging spent its whole stop timeout draining into them.
        for d in nodes.values():
            d.stop()
        proxy.close()
    print(f"{fault}: the stalled node's group served elsewhere after {served_after:.2f}s")
    assert refusals == []
    assert 0 < served_after <= LEASE_MS / 1000 + 2, served_after

    async def stored() -> int:
        db = await asyncpg.connect(url)
        try:
            return int(
                await db.fetchval("SELECT max(committed_offset) FROM offsets WHERE topic = 't'")
            )
        finally:
            await db.close()

    assert asyncio.run(stored()) < 666  # the stalled transaction never committed
