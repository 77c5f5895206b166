"""Offset retention across a restart, on a fake clock: the state machine's records go through
the real SQLite store, a new coordinator loads them, and the sweep's deletions are durable."""

from __future__ import annotations

from pathlib import Path

from coordinator.group import GroupConfig, GroupCoordinator
from coordinator.group.classic.states import GroupState
from coordinator.group.records import Record
from coordinator.store import SqliteStore, Write
from tests.coordinator.group.harness import Harness
from tests.coordinator.group.test_offsets import DAY, consumer_group, subscription


async def _persist(tmp_path: Path, records: list[Record]) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    await store.write(Write(records))
    await store.close()


async def _reload(tmp_path: Path, now: int) -> GroupCoordinator:
    store = SqliteStore(tmp_path)
    state = await store.open()
    await store.close()
    co = GroupCoordinator(GroupConfig())
    co.load(state.records, now)
    return co


async def test_empty_group_expires_from_when_it_became_empty_and_active_group_keeps(
    tmp_path: Path,
) -> None:
    h = Harness()
    active, generation = consumer_group(h, "t")
    h.commit({("t", 0): 11}, member_id=active, generation=generation)

    token = h.join(group="idle", protocols=[("range", subscription("t"))])
    h.advance(3000)
    idle = h.join_result(token).member_id
    h.sync(idle, 1, None, [(idle, b"a")], group="idle")
    h.commit({("t", 0): 22}, member_id=idle, generation=1, group="idle")
    h.advance(5000)
    h.heartbeat(active, generation)
    h.leave(idle, group="idle")
    became_empty = h.now
    await _persist(tmp_path, h.records)

    # A day after the idle group became Empty, minus a millisecond: nothing expires yet.
    co = await _reload(tmp_path, became_empty + DAY - 1)
    assert co.groups["idle"].state == GroupState.EMPTY
    assert co.expire_offsets(became_empty + DAY - 1, DAY).records == []

    # At a day: the Empty group's offsets go, and then the group; the active one stays.
    co = await _reload(tmp_path, became_empty + DAY)
    assert co.groups["group"].state == GroupState.STABLE
    sweep = co.expire_offsets(became_empty + DAY, DAY)
    assert "idle" not in co.groups
    await _persist(tmp_path, sweep.records)

    co = await _reload(tmp_path, became_empty + DAY)
    assert "idle" not in co.groups
    assert co.fetch_offsets("group", None, became_empty + DAY).topics[0].partitions[0].offset == 11
