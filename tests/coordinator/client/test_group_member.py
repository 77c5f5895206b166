"""GroupMember against the in-process daemon: joining, rebalancing, offsets, leaving."""

from __future__ import annotations

import asyncio

from coordinator.client import ConnectionPool, GroupAdmin, GroupMember, LeaderContext
from coordinator.client.consumer_role import TopicPartition

FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000}


def partitions(m: GroupMember) -> set[TopicPartition]:
    return {(t, p) for t, ps in m.assignment.items() for p in ps}


async def settle(*members: GroupMember, after: int = 0, timeout: float = 10) -> None:
    """Until every member is stable in one generation newer than ``after`` (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        generations = {m.generation_id for m in members}
        stable = all(m._stable.is_set() for m in members)
        if len(generations) == 1 and min(generations) > after and stable:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("members did not settle")


async def test_two_consumers_split_the_topic_and_one_takes_over_when_the_other_leaves(
    bootstrap: str,
) -> None:
    pool = ConnectionPool()
    events: list[tuple[str, frozenset[TopicPartition]]] = []
    a = GroupMember(
        bootstrap,
        "g",
        protocols=["range"],
        topics=["t"],
        pool=pool,
        on_partitions_assigned=lambda tps: events.append(("assigned", tps)),
        on_partitions_revoked=lambda tps: events.append(("revoked", tps)),
        **FAST,
    )
    await a.start(10)
    assert a.is_leader and a.generation_id == 1 and len(partitions(a)) == 12
    async with GroupMember(
        bootstrap, "g", protocols=["range"], topics=["t"], pool=pool, **FAST
    ) as b:
        await settle(a, b)
        assert partitions(a) | partitions(b) == {("t", p) for p in range(12)}
        assert not partitions(a) & partitions(b)
        assert ("revoked", frozenset(("t", p) for p in range(12))) in events  # eager
        await b.commit({("t", 0): 42})
        assert (await a.fetch_offsets([("t", 0)]))[("t", 0)].offset == 42
        generation = a.generation_id
    await settle(a, after=generation)
    assert len(partitions(a)) == 12
    await a.close()
    async with GroupAdmin(bootstrap, pool=pool) as admin:
        assert (await admin.describe_group("g")).state == "Empty"
    await pool.close()


async def test_cooperative_rebalance_only_moves_what_must_move(bootstrap: str) -> None:
    pool = ConnectionPool()
    revoked: list[frozenset[TopicPartition]] = []
    a = GroupMember(
        bootstrap,
        "coop",
        protocols=["cooperative-sticky"],
        topics=["t"],
        pool=pool,
        on_partitions_revoked=revoked.append,
        **FAST,
    )
    await a.start(10)
    b = GroupMember(
        bootstrap, "coop", protocols=["cooperative-sticky"], topics=["t"], pool=pool, **FAST
    )
    await b.start(10)
    await settle(a, b)
    # a gave up exactly what b got, and only that; two rounds were needed (KIP-429).
    assert len(partitions(a)) == len(partitions(b)) == 6
    assert revoked and set().union(*revoked) == partitions(b)
    await b.close()
    await a.close()
    await pool.close()


async def test_static_member_keeps_its_assignment_across_a_restart(bootstrap: str) -> None:
    pool = ConnectionPool()
    kwargs = {"protocols": ["range"], "topics": ["t"], "pool": pool, **FAST}
    a = GroupMember(bootstrap, "static", group_instance_id="i-a", **kwargs)  # type: ignore[arg-type]
    b = GroupMember(bootstrap, "static", group_instance_id="i-b", **kwargs)  # type: ignore[arg-type]
    await asyncio.gather(a.start(10), b.start(10))
    await settle(a, b)
    before = partitions(b)
    await b.close()  # static: no LeaveGroup
    async with GroupAdmin(bootstrap, pool=pool) as admin:
        assert len((await admin.describe_group("static")).members) == 2
    again = GroupMember(bootstrap, "static", group_instance_id="i-b", **kwargs)  # type: ignore[arg-type]
    await again.start(10)
    assert partitions(again) == before
    await asyncio.gather(a.close(), again.close())
    await pool.close()


async def test_other_protocol_types_assign_with_a_callable(bootstrap: str) -> None:
    seen: list[LeaderContext] = []

    def assign(ctx: LeaderContext) -> dict[str, bytes]:
        seen.append(ctx)
        return {m.member_id: m.metadata.upper() for m in ctx.members}

    async with GroupMember(
        bootstrap, "connect", "connect", [("default", b"worker-a")], assign=assign, **FAST
    ) as worker:
        assert worker.protocol_name == "default"
        assert worker.assignment_bytes == b"WORKER-A"
        assert seen[0].members[0].metadata == b"worker-a"
