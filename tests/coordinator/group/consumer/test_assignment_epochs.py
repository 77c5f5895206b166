"""KIP-1251 (Kafka 4.3): assignment epochs. A commit sent at the epoch a member had before it
gave up partitions (in flight while it moved on) is taken for the partitions it kept, and
refused STALE_MEMBER_EPOCH for those it gave up; the epochs survive a reload."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from coordinator.group.records import ConsumerMemberRecord
from coordinator.store import SqliteStore, Write
from protocol.errors import ErrorCode

from .harness import ConsumerHarness, Member

STALE = ErrorCode.STALE_MEMBER_EPOCH
EVERY = {("orders", p): 10 + p for p in range(6)}


def a_gave_up_three(h: ConsumerHarness) -> tuple[Member, Member]:
    """a holds orders 0-5 at epoch 1; b joins (epoch 2); a revokes 3-5 and moves to 2."""
    a, b = h.member("a"), h.member("b")
    a.join()
    assert a.epoch == 1 and len(a.partitions()) == 6
    b.join()
    a.beat()  # told to revoke 3-5: still at epoch 1
    assert a.epoch == 1
    a.beat()  # revoked: epoch 2
    assert a.epoch == 2 and a.partitions() == {("orders", p) for p in range(3)}
    return a, b


def test_a_commit_at_the_epoch_before_a_revocation_is_taken_for_the_kept_partitions() -> None:
    h = ConsumerHarness()
    a_gave_up_three(h)
    answer = h.commit(EVERY, member_id="a", generation=1, version=9)
    assert answer == {("orders", p): 0 if p < 3 else STALE for p in range(6)}
    fetched = h.co.fetch_offsets("group", [("orders", list(range(6)))], h.now)
    offsets = {q.partition: q.offset for t in fetched.topics for q in t.partitions}
    assert offsets == {0: 10, 1: 11, 2: 12, 3: -1, 4: -1, 5: -1}


def test_partitions_being_revoked_are_still_taken_at_the_older_epoch() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    a.beat()  # revoking 3-5, still at epoch 1: its epoch is current, everything is taken
    assert h.commit(EVERY, member_id="a", generation=1, version=9) == dict.fromkeys(EVERY, 0)


def test_a_partition_got_after_the_commit_epoch_is_refused() -> None:
    h = ConsumerHarness()
    _a, b = a_gave_up_three(h)
    b.beat()
    b.beat()  # b gets 3-5 at epoch 2
    assert b.epoch == 2 and len(b.partitions()) == 3
    # b never held anything at epoch 1: a commit at epoch 1 is stale for every partition.
    mine = {("orders", p): 1 for p in range(3, 6)}
    assert h.commit(mine, member_id="b", generation=1, version=9) == dict.fromkeys(mine, STALE)
    assert h.commit(mine, member_id="b", generation=2, version=9) == dict.fromkeys(mine, 0)
    # A newer epoch than the member's is refused outright, as before.
    assert h.commit(mine, member_id="b", generation=3, version=9) == dict.fromkeys(mine, STALE)


def test_assignment_epochs_survive_a_reload() -> None:
    h = ConsumerHarness()
    a_gave_up_three(h)
    [last] = [r for r in h.records if isinstance(r, ConsumerMemberRecord)][-1:]
    assert last.member_id == "a" and last.assigned_epochs == {"orders": [1, 1, 1]}
    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(h.records, again.now))
    answer = again.commit(EVERY, member_id="a", generation=1, version=9)
    assert answer == {("orders", p): 0 if p < 3 else STALE for p in range(6)}


def test_a_member_stored_without_epochs_counts_its_partitions_got_at_its_epoch() -> None:
    """A store written before KIP-1251 was served: the older commit is refused as before."""
    h = ConsumerHarness()
    a_gave_up_three(h)
    older = [
        replace(r, assigned_epochs={}, pending_revocation_epochs={})
        if isinstance(r, ConsumerMemberRecord)
        else r
        for r in h.records
    ]
    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(older, again.now))
    kept = {("orders", p): 1 for p in range(3)}
    assert again.commit(kept, member_id="a", generation=1, version=9) == dict.fromkeys(kept, STALE)
    assert again.commit(kept, member_id="a", generation=2, version=9) == dict.fromkeys(kept, 0)


def test_assignment_epochs_are_stored_in_the_member_record(tmp_path: Path) -> None:
    h = ConsumerHarness()
    a_gave_up_three(h)
    written = [r for r in h.records if isinstance(r, ConsumerMemberRecord)]

    async def through_sqlite() -> list[object]:
        store = SqliteStore(tmp_path)
        await store.open()
        try:
            await store.write(Write(records=list(written)))
        finally:
            await store.close()
        store = SqliteStore(tmp_path)
        state = await store.open()
        await store.close()
        return list(state.records)

    read = {(r.member_id): r for r in asyncio.run(through_sqlite())}
    assert isinstance(read["a"], ConsumerMemberRecord)
    assert read["a"].assigned_epochs == {"orders": [1, 1, 1]} == written[-1].assigned_epochs
