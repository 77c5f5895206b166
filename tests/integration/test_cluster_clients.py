"""Unmodified kafka-python, aiokafka and confluent-kafka consumers against a cluster of three
nodes: when the node coordinating their group is killed, they carry on with the new
coordinator without a rebalance (same assignment, no assignment callback), and no
acknowledged commit is lost."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.client.connection import connect

from .clients import LIBRARIES, Member
from .conftest import Daemon, wait_until
from .test_cluster import LEASE_MS, coordinator_of, spread, start_cluster

pytestmark = pytest.mark.integration

PARTITIONS = {("t", p) for p in range(4)}


@pytest.fixture(params=sorted(LIBRARIES))
def lib(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def balanced(members: list[Member]) -> bool:
    owned = [m.assigned for m in members]
    return all(len(o) == 2 for o in owned) and set().union(*owned) == PARTITIONS


def commit_when_served(
    member: Member, offsets: dict[tuple[str, int], int], timeout_s: float
) -> float:
    """Commits (retrying while the coordinator moves); seconds it took."""
    started = time.monotonic()
    while True:
        try:
            member.commit(offsets)
            return time.monotonic() - started
        except Exception:
            if time.monotonic() - started > timeout_s:
                raise
            time.sleep(0.2)


def test_consumers_keep_their_assignment_when_their_coordinator_is_killed(
    lib: str, start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 3)
    # Every node owns its share before the group forms: what is tested is the kill, not a
    # hand-over of the group's partition while its members are still finding it.
    asyncio.run(spread(nodes))
    bootstrap = ",".join(d.bootstrap for d in nodes.values())
    group = f"cluster-{lib}"
    cls = LIBRARIES[lib]
    members = [
        # Kafka's default session is 45 s; 30 s leaves room for a loaded machine, where
        # librdkafka's own session timer once ran out before the new owner answered.
        cls(bootstrap, group, "t", client_id=f"{lib}-{i}", session_timeout_ms=30000)  # type: ignore[arg-type]
        for i in range(2)
    ]
    try:
        assert wait_until(lambda: balanced(members), 30), [m.assigned for m in members]
        owned = [m.assigned for m in members]
        callbacks = [m.rebalances for m in members]
        mine = sorted(members[0].assigned)
        commit_when_served(members[0], dict.fromkeys(mine, 5), 10)

        async def owner() -> int:
            c = await connect("127.0.0.1", nodes[1].port)
            try:
                return await coordinator_of(c, group)
            finally:
                c.close()

        coordinator = asyncio.run(owner())
        assert coordinator in nodes
        nodes[coordinator].stop(signal.SIGKILL)
        took = commit_when_served(members[0], dict.fromkeys(mine, 9), LEASE_MS / 1000 + 20)
        print(f"{lib}: committing again {took:.2f}s after its coordinator was killed")
        assert all(members[0].committed(tp) == 9 for tp in mine)
        time.sleep(1)  # a rebalance would show within a heartbeat or two
        assert [m.assigned for m in members] == owned
        assert [m.rebalances for m in members] == callbacks, "the group rebalanced"
    finally:
        for m in members:
            m.close()


def test_thirty_groups_of_three_libraries_spread_over_three_nodes_survive_a_kill(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 3)
    bootstrap = ",".join(d.bootstrap for d in nodes.values())
    members: dict[str, Member] = {}
    try:
        for lib in sorted(LIBRARIES):
            for i in range(10):
                group = f"thirty-{lib}-{i}"
                members[group] = LIBRARIES[lib](  # type: ignore[abstract]
                    bootstrap, group, "t", client_id=f"{lib}-{i}", session_timeout_ms=10000
                )
        assert wait_until(lambda: all(m.assigned == PARTITIONS for m in members.values()), 60)

        async def coordinators() -> dict[str, set[int]]:
            """Each group's coordinator as every node names it."""
            conns = [await connect("127.0.0.1", d.port) for d in nodes.values()]
            try:
                return {g: {await coordinator_of(c, g) for c in conns} for g in members}
            finally:
                for c in conns:
                    c.close()

        named = asyncio.run(coordinators())
        assert all(len(ids) == 1 for ids in named.values()), named  # every node agrees
        owners = {g: next(iter(ids)) for g, ids in named.items()}
        assert set(owners.values()) == set(nodes)  # spread over all three
        callbacks = {g: m.rebalances for g, m in members.items()}
        victim = max(nodes, key=lambda n: sum(o == n for o in owners.values()))
        orphaned = [g for g, o in owners.items() if o == victim]
        nodes[victim].stop(signal.SIGKILL)
        for group in orphaned:
            commit_when_served(members[group], {("t", 0): 7}, LEASE_MS / 1000 + 15)
            assert members[group].committed(("t", 0)) == 7
        time.sleep(1)
        assert {g: m.rebalances for g, m in members.items()} == callbacks, "a group rebalanced"
        assert all(m.assigned == PARTITIONS for m in members.values())
    finally:
        for m in members.values():
            m.close()
