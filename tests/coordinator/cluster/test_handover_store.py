"""Hand-overs in PostgreSQL (group/handover.py): written in the transaction that releases a
partition, with the group's snapshot as memory held it; read once by the next owner, and
only by the owner right after the one that wrote them."""

from __future__ import annotations

from typing import Any

from coordinator.cluster import leases
from coordinator.group.handover import GroupHandover
from coordinator.group.records import GroupMetadataRecord, MemberRecord
from coordinator.store.postgres import PostgresStore

from .test_leases import LISTENERS, PARTITIONS, group_on, open_store, tick


def in_memory(group: str, generation: int) -> tuple[GroupMetadataRecord, GroupHandover]:
    member = MemberRecord("m-1", None, "c", "/127.0.0.1", 30000, 10000, "consumer", [], b"", 0)
    snapshot = GroupMetadataRecord(
        group, "PreparingRebalance", 0, "consumer", "range", generation, "m-1", [member]
    )
    return snapshot, GroupHandover(group, generation, {"m-1": 4000}, {"p-1": 9000})


async def give_back(store: PostgresStore, node_id: int, groups: list[Any]) -> list[int]:
    """One placement round for ``node_id`` that releases its share, handing ``groups`` over
    (as cluster/membership.py does); returns the partitions released."""
    result = await leases.place(
        store.pool, 5000, node_id, LISTENERS, 60_000, PARTITIONS, dict(store.epochs), 0
    )
    assert result is not None and result.released
    held = dict(store.epochs)

    async def hand_over(conn: Any, released: dict[int, int]) -> None:
        mine = {p: e for p, e in released.items() if held.get(p) == e}
        await store.write_handovers(conn, mine, groups)

    await leases.release(store.pool, 5000, node_id, result.released, hand_over)
    for p in result.released:
        store.epochs.pop(p, None)
    return result.released


async def test_the_next_owner_reads_a_hand_over_once(postgres: Any) -> None:
    url = postgres.create_database("handover")
    a, b = await open_store(url), await open_store(url)
    try:
        await tick(a, 1)  # a owns everything
        await tick(b, 2)  # b is live: a's next round gives b its share
        released = await give_back(a, 1, [in_memory(group_on(p), 7) for p in range(PARTITIONS)])
        partition = released[0]
        group = group_on(partition)
        taken = await leases.place(
            b.pool, 5000, 2, LISTENERS, 60_000, PARTITIONS, dict(b.epochs), 0
        )
        assert taken is not None and partition in taken.acquired
        b.epochs.update(taken.acquired)
        records, handovers = await b.take_over(taken.acquired)
        # The snapshot as memory held it replaced the stored one.
        [snapshot] = [
            r for r in records if isinstance(r, GroupMetadataRecord) and r.group_id == group
        ]
        assert (snapshot.group_id, snapshot.generation_id) == (group, 7)
        assert snapshot.state == "PreparingRebalance"
        by_group = {h.group_id: h for h in handovers}
        assert set(by_group) == {group_on(p) for p in taken.acquired}
        got = by_group[group]
        assert (got.generation_id, got.sessions, got.pending) == (7, {"m-1": 4000}, {"p-1": 9000})
        assert 0 <= got.age_ms < 5000
        # Read once: a later owner (b again after a restart, say) loads without it.
        again = {p: e + 1 for p, e in taken.acquired.items()}
        assert (await b.take_over(again))[1] == []
    finally:
        await a.close()
        await b.close()


async def test_a_hand_over_of_an_older_epoch_is_ignored(postgres: Any) -> None:
    url = postgres.create_database("handover_stale")
    a, b = await open_store(url), await open_store(url)
    try:
        await tick(a, 1)
        await tick(b, 2)
        released = await give_back(a, 1, [in_memory(group_on(p), 3) for p in range(PARTITIONS)])
        # Not the epoch right after the releasing owner's: some owner came between.
        skipped = dict.fromkeys(released, 3)  # a held them at 1; b would take them at 2
        records, handovers = await b.take_over(skipped)
        assert handovers == []
        assert any(isinstance(r, GroupMetadataRecord) for r in records)
    finally:
        await a.close()
        await b.close()


async def test_a_node_that_no_longer_owns_a_partition_hands_nothing_over(postgres: Any) -> None:
    url = postgres.create_database("handover_fenced")
    a, b = await open_store(url), await open_store(url)
    try:
        await tick(a, 1)
        await tick(b, 2)
        a.epochs = {p: e + 5 for p, e in a.epochs.items()}  # held at epochs it no longer has
        released = await give_back(a, 1, [in_memory(group_on(p), 3) for p in range(PARTITIONS)])
        taken = await leases.place(
            b.pool, 5000, 2, LISTENERS, 60_000, PARTITIONS, dict(b.epochs), 0
        )
        assert taken is not None and set(released) <= set(taken.acquired)
        records, handovers = await b.take_over(taken.acquired)
        assert handovers == [] and records == []
    finally:
        await a.close()
        await b.close()
