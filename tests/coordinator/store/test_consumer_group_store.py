"""KIP-848 consumer group snapshots in the stores (SQLite, and PostgreSQL on a real server
the tests start): what is written is there after reopening, and deletions stick."""

from __future__ import annotations

from coordinator.group.records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    GroupDeletedRecord,
    OffsetCommitRecord,
)
from coordinator.store import Write
from tests.coordinator.store.test_store import StoreFactory, new_store, reopened

__all__ = ["new_store"]  # the fixture, for pytest


def consumer_group(group_id: str, epoch: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(group_id, epoch, epoch, {"orders": 3})


def member(group_id: str, member_id: str, epoch: int) -> ConsumerMemberRecord:
    return ConsumerMemberRecord(
        group_id=group_id,
        member_id=member_id,
        instance_id="i-1",
        rack_id=None,
        client_id="rdkafka",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=300000,
        subscribed_topic_names=["orders"],
        server_assignor="uniform",
        state="unrevoked_partitions",
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        assigned={"orders": [0, 1]},
        pending_revocation={"orders": [2]},
        target={"orders": [0, 1]},
    )


def consumer(records: list[object]) -> list[object]:
    kinds = (ConsumerGroupRecord, ConsumerMemberRecord)
    return sorted(
        (r for r in records if isinstance(r, kinds)),
        key=lambda r: (r.group_id, getattr(r, "member_id", "")),
    )


async def test_consumer_groups_survive_reopening(new_store: StoreFactory) -> None:
    store = new_store()
    await store.open()
    commit = OffsetCommitRecord("a", "orders", 0, 5, -1, "", 1000, None)
    await store.write(
        Write(
            records=[
                consumer_group("a", 3),
                member("a", "m-1", 2),
                member("a", "m-2", 3),
                commit,
                consumer_group("b", 2),
                member("b", "m-1", 2),
            ]
        )
    )
    await store.write(
        Write(
            records=[
                ConsumerMemberRemovedRecord("a", "m-2"),
                consumer_group("a", 4),
                member("a", "m-1", 4),
            ]
        )
    )
    await store.close()
    state = await reopened(new_store)
    assert consumer(state.records) == [
        consumer_group("a", 4),
        member("a", "m-1", 4),
        consumer_group("b", 2),
        member("b", "m-1", 2),
    ]
    assert commit in state.records


async def test_a_forgotten_consumer_group_keeps_its_offsets(new_store: StoreFactory) -> None:
    store = new_store()
    await store.open()
    commit = OffsetCommitRecord("a", "orders", 0, 5, -1, "", 1000, None)
    records = [consumer_group("a", 3), member("a", "m", 3), commit]
    records += [consumer_group("b", 2), member("b", "m", 2)]
    await store.write(Write(records=records))
    await store.write(Write(records=[ConsumerGroupDeletedRecord("a"), GroupDeletedRecord("b")]))
    await store.close()
    state = await reopened(new_store)
    assert state.records == [commit]
