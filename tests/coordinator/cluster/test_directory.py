"""The cluster's groups as every node's console reads them from a real PostgreSQL: a
classic group from its snapshot, a KIP-848 group's state worked out as its coordinator
does, a group known only by its offsets as an Empty classic group."""

from __future__ import annotations

from typing import Any

from coordinator.cluster.directory import StoredGroup, consumer_state, read_groups
from coordinator.cluster.placement import partition_for
from coordinator.group.records import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    GroupMetadataRecord,
    MemberRecord,
    OffsetCommitRecord,
)
from coordinator.store import Write
from tests.coordinator.cluster.test_leases import PARTITIONS, open_store, tick


def classic_member(member_id: str) -> MemberRecord:
    return MemberRecord(member_id, None, "app", "/10.0.0.1", 60000, 45000, "consumer", [], b"", 1)


def consumer_member(member_id: str, epoch: int, state: str = "stable") -> ConsumerMemberRecord:
    return ConsumerMemberRecord(
        "kip848", member_id, None, None, "app", "/10.0.0.2", 60000, ["t"], "range",
        state, epoch, epoch - 1, {"t": [0]}, {}, {"t": [0]},
    )  # fmt: skip


async def test_every_group_of_the_store_is_read_with_its_state_and_size(postgres: Any) -> None:
    store = await open_store(postgres.create_database("directory"))
    try:
        await tick(store, 1)  # owns every partition: may write
        snapshot = GroupMetadataRecord(
            "shop", "Stable", 1, "consumer", "range", 3, "m-1",
            [classic_member("m-1"), classic_member("m-2")],
        )  # fmt: skip
        records: list[Any] = [
            snapshot,
            ConsumerGroupRecord("kip848", 5, 5, {"t": 1}),
            consumer_member("c-1", 5),
            consumer_member("c-2", 4, "unrevoked_partitions"),  # not there yet
            OffsetCommitRecord("bare", "t", 0, 7, -1, "", 1, None),
        ]
        await store.write(Write(records=records))
        async with store.pool.acquire() as conn:
            found = {g.group_id: g for g in await read_groups(conn, "uniform")}
    finally:
        await store.close()
    of = {g: partition_for(g, PARTITIONS) for g in ("shop", "kip848", "bare")}
    assert found == {
        "shop": StoredGroup("shop", "classic", "Stable", "consumer", "range", 2, 3, of["shop"]),
        "kip848": StoredGroup(
            "kip848", "consumer", "Reconciling", "consumer", "range", 2, 5, of["kip848"]
        ),
        "bare": StoredGroup("bare", "classic", "Empty", "", "", 0, 0, of["bare"]),
    }


def test_a_consumer_groups_state_is_worked_out_as_its_coordinator_does() -> None:
    assert consumer_state(0, 3, 3, 0) == "Empty"
    assert consumer_state(2, 4, 3, 2) == "Assigning"  # the epoch is ahead of the target
    assert consumer_state(2, 4, 4, 1) == "Reconciling"
    assert consumer_state(2, 4, 4, 2) == "Stable"
