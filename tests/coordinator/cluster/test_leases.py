"""Leases and fencing against a real PostgreSQL: nodes share the partitions evenly, a dead
node's partitions are taken over with a new epoch, and a node that lost a partition can
never write to it again (the database refuses, whatever the node believes)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import asyncpg
import pytest

from coordinator.cluster import leases
from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting
from coordinator.group.records import OffsetCommitRecord
from coordinator.store import Write, bounded
from coordinator.store.postgres import _FENCE, Fenced, PostgresStore

PARTITIONS = 6
LISTENERS = {"PLAINTEXT": ("127.0.0.1", 9092)}


async def open_store(url: str) -> PostgresStore:
    store = PostgresStore(url, PARTITIONS, clustered=True)
    await store.open()
    return store


async def tick(
    store: PostgresStore, node_id: int, lease_ms: int = 60_000, settle_ms: int = 0
) -> leases.TickResult:
    """One placement round for ``node_id``, which then holds what it took (as the cluster
    membership does)."""
    result = await leases.place(
        store.pool, 5000, node_id, LISTENERS, lease_ms, PARTITIONS, dict(store.epochs), settle_ms
    )
    assert result is not None
    if result.released:
        await leases.release(store.pool, 5000, node_id, result.released)
    for p in [*result.lost, *result.released]:
        store.epochs.pop(p, None)
    store.epochs.update(result.acquired)
    store.node_id = node_id
    return result


def commit(group: str, offset: int) -> Write:
    return Write(records=[OffsetCommitRecord(group, "t", 0, offset, -1, "", 1, None)])


def group_on(partition: int) -> str:
    return next(g for i in range(1000) if partition_for(g := f"group-{i}", PARTITIONS) == partition)


@pytest.fixture
async def two_nodes(postgres: Any) -> Any:
    url = postgres.create_database("leases")
    a, b = await open_store(url), await open_store(url)
    yield url, a, b
    await a.close()
    await b.close()


async def test_partitions_are_shared_evenly_and_epochs_grow_with_each_owner(two_nodes):
    _url, a, b = two_nodes
    first = await tick(a, 1)
    assert sorted(first.acquired) == list(range(PARTITIONS))  # alone: everything
    assert set(first.acquired.values()) == {1}
    await tick(b, 2)  # joins: nothing is free yet
    released = await tick(a, 1)  # a gives back b's share...
    assert len(released.released) == PARTITIONS // 2
    taken = await tick(b, 2)  # ...and b takes it, at epoch 2
    assert sorted(taken.acquired) == released.released
    assert set(taken.acquired.values()) == {2}
    assert Counter(taken.owners.values()) == {1: 3, 2: 3}


async def test_a_node_whose_partition_was_taken_over_cannot_write_to_it(two_nodes):
    url, a, b = two_nodes
    await tick(a, 1, lease_ms=200)
    group = group_on(0)
    await a.write(commit(group, 1))
    await asyncio.sleep(0.3)  # a's lease runs out (a paused process)...
    taken = await tick(b, 2)  # ...b finds it dead and takes everything
    assert 0 in taken.acquired
    fenced: list[set[int]] = []
    a.on_fenced = fenced.append
    with pytest.raises(Fenced):
        await a.write(commit(group, 666))  # a still believes it holds partition 0
    assert fenced == [{0}]
    await b.write(commit(group, 2))
    conn = await asyncpg.connect(url)
    try:
        stored = await conn.fetchval(
            "SELECT committed_offset FROM offsets WHERE group_id = $1", group
        )
    finally:
        await conn.close()
    assert stored == 2
    back = await tick(a, 1)  # a comes back: told what it lost
    assert sorted(back.lost) == list(range(PARTITIONS))


async def test_an_expired_lease_alone_fences_writes(two_nodes):
    """Nobody took the partition over yet, but a's lease ran out: its write is refused,
    so a new owner can never find a write it did not see when it loaded."""
    _url, a, _b = two_nodes
    await tick(a, 1, lease_ms=100)
    await asyncio.sleep(0.2)
    with pytest.raises(Fenced):
        await a.write(commit(group_on(3), 1))
    await tick(a, 1)  # renewed: a writes again
    await a.write(commit(group_on(3), 2))


async def test_groups_are_loaded_per_partition(two_nodes):
    _url, a, _b = two_nodes
    await tick(a, 1)
    await a.write(Write(records=[*commit(group_on(1), 5).records, *commit(group_on(2), 6).records]))
    loaded = await a.load_partitions([1])
    assert [(r.group_id, r.offset) for r in loaded] == [(group_on(1), 5)]  # type: ignore[union-attr]


async def test_a_node_restarted_within_its_lease_takes_its_partitions_back_at_a_new_epoch(
    two_nodes,
):
    _url, a, b = two_nodes
    await tick(a, 1)
    await a.write(commit(group_on(0), 1))
    b.epochs.clear()  # the same node id, restarted: it holds nothing yet
    again = await tick(b, 1)
    assert sorted(again.acquired) == list(range(PARTITIONS))
    assert set(again.acquired.values()) == {2}  # the previous run's writes are fenced
    with pytest.raises(Fenced):
        await a.write(commit(group_on(0), 2))


async def stalled_write(url: str, partition: int, epoch: int, node_id: int) -> asyncpg.Connection:
    """A node stalled inside a write: its fence's share lock on ``partition`` is held."""
    conn = await asyncpg.connect(url)
    await conn.execute("BEGIN")
    await conn.fetch(_FENCE, [partition], [epoch], node_id)
    return conn


async def test_a_takeover_never_waits_on_a_stalled_nodes_write(two_nodes):
    url, a, b = two_nodes
    await tick(a, 1, lease_ms=300)
    stalled = await stalled_write(url, 0, a.epochs[0], 1)
    try:
        await asyncio.sleep(0.4)  # a's lease runs out
        began = time.monotonic()
        taken = await tick(b, 2)
        assert time.monotonic() - began < 1.5  # it did not wait for the row lock
        assert sorted(taken.acquired) == list(range(1, PARTITIONS))  # all but the locked one
    finally:
        await stalled.close()  # the server ends it within a's lease (test below)
    again = await tick(b, 2)
    assert list(again.acquired) == [0]


async def test_a_node_renews_its_lease_while_another_sits_on_the_placement_lock(two_nodes):
    url, a, b = two_nodes
    await tick(a, 1)
    stalled = await asyncpg.connect(url)
    await stalled.execute("BEGIN")
    await stalled.execute("SELECT pg_advisory_xact_lock($1)", leases.PLACEMENT_LOCK)
    try:
        began = time.monotonic()
        view = await leases.renew(b.pool, 2000, 2, LISTENERS, 60_000, 0)
        assert 2 in view.live and time.monotonic() - began < 1
        placed = await leases.place(b.pool, 5000, 2, LISTENERS, 60_000, PARTITIONS, {}, 0)
        assert placed is None  # gave up waiting for the lock: tries again next tick
        assert time.monotonic() - began < 0.5 + leases.LOCK_WAIT_MS / 1000
    finally:
        await stalled.close()
    assert await leases.place(b.pool, 5000, 2, LISTENERS, 60_000, PARTITIONS, {}, 0)


async def test_the_server_ends_a_stalled_transaction_once_its_budget_is_spent(two_nodes):
    """A node paused (or cut off) inside a transaction: nothing on its side runs, yet the
    server frees its locks once the budget the transaction began with is spent."""
    url, _a, _b = two_nodes
    stalled = await asyncpg.connect(url)
    other = await asyncpg.connect(url)
    try:
        await stalled.execute(bounded.begin(300, "test"))
        await stalled.execute("SELECT pg_advisory_xact_lock(42)")
        assert not await other.fetchval("SELECT pg_try_advisory_lock(42)")
        await asyncio.sleep(0.8)
        assert await other.fetchval("SELECT pg_try_advisory_lock(42)")
    finally:
        stalled.terminate()
        await other.close()


async def test_a_transaction_that_overruns_its_budget_is_cut_off_here_too(two_nodes):
    _url, a, _b = two_nodes
    began = time.monotonic()
    with pytest.raises(bounded.BudgetSpent):
        async with bounded.transaction(a.pool, 300, "test") as conn:
            await conn.execute("SELECT pg_sleep(5)")
    assert time.monotonic() - began < 1


async def test_a_node_back_after_its_lease_ran_out_keeps_its_own_but_takes_nothing_else(
    two_nodes,
):
    """Every lease ran out together (the database was away): the first node to renew
    keeps its partitions and does not take the others' while it is settling."""
    _url, a, b = two_nodes
    await tick(a, 1)
    await tick(b, 2)
    await tick(a, 1)
    await tick(b, 2)  # 3 partitions each
    mine = {1: dict(a.epochs), 2: dict(b.epochs)}
    for store, node in ((a, 1), (b, 2)):
        await tick(store, node, lease_ms=100)
    await asyncio.sleep(0.2)  # both leases run out
    back = await tick(a, 1, settle_ms=60_000)
    assert not back.acquired and not back.lost and not back.released
    assert a.epochs == mine[1]
    settled = await tick(a, 1, settle_ms=0)  # once settled it takes b's (still dead)
    assert sorted(settled.acquired) == sorted(mine[2])


async def test_a_node_stopped_and_started_again_gets_back_its_own_partitions(postgres: Any):
    """SIGTERM, then a restart: the node drains, the others take its partitions; back, it
    gets exactly those again, and no partition the others had before moves."""
    url = postgres.create_database("leases_drain")
    nodes = {n: await open_store(url) for n in (1, 2, 3)}
    try:
        for _ in range(3):  # node 3 first: it holds low partitions, not the last ones
            for n in (3, 2, 1):
                await tick(nodes[n], n)
        before = {n: set(store.epochs) for n, store in nodes.items()}
        assert before[3] != {PARTITIONS - 2, PARTITIONS - 1}
        assert all(len(held) == PARTITIONS // 3 for held in before.values())
        stopping = await leases.place(
            nodes[3].pool, 5000, 3, LISTENERS, 60_000, PARTITIONS, dict(nodes[3].epochs), 0, True
        )
        assert stopping is not None and sorted(stopping.released) == sorted(before[3])
        await leases.release(nodes[3].pool, 5000, 3, stopping.released, stopping=True)
        await leases.leave(nodes[3].pool, 5000, 3)
        nodes[3].epochs.clear()
        for n in (1, 2):
            await tick(nodes[n], n)
        assert set(nodes[1].epochs) | set(nodes[2].epochs) == set(range(PARTITIONS))
        for _ in range(3):  # back: the others give, it takes
            for n, store in nodes.items():
                await tick(store, n)
        assert {n: set(store.epochs) for n, store in nodes.items()} == before
    finally:
        for store in nodes.values():
            await store.close()


async def test_a_cut_off_node_names_the_node_that_takes_each_of_its_partitions(postgres: Any):
    """A node whose lease runs out (cut off) names, from its last view alone, for each of
    its partitions the very node that takes it once the others see its lease gone; its
    view also tells how much of each lease was left."""
    url = postgres.create_database("leases_cutoff")
    nodes = {n: await open_store(url) for n in (1, 2, 3)}
    try:
        for _ in range(3):
            for n in (1, 2, 3):
                await tick(nodes[n], n, lease_ms=60_000 if n != 3 else 1000)
        last = await tick(nodes[3], 3, lease_ms=1000)  # its last renewal before the cut
        assert last.view is not None
        assert 0 < last.view.lease_left_ms[3] <= 1000
        assert 1000 < last.view.lease_left_ms[1] <= 60_000
        routing = ClusterRouting(
            3,
            PARTITIONS,
            owners=dict(last.view.owners),
            live=last.view.live,
            settled=last.view.settled,
            previous=last.view.previous,
            lease_valid_until_ms=0,  # run out
        )
        theirs = sorted(nodes[3].epochs)
        assert len(theirs) == PARTITIONS // 3
        named = {p: routing.owner_of(p, now_ms=1) for p in range(PARTITIONS)}
        assert 3 not in named.values()
        await asyncio.sleep(1.1)  # its lease runs out in the database
        for n in (1, 2, 1, 2):
            await tick(nodes[n], n)
        taken = {p: n for n in (1, 2) for p in nodes[n].epochs}
        assert taken == named
    finally:
        for store in nodes.values():
            await store.close()
