"""A data directory written before the one group model (main at 74b5e3d, where a consumer
group's offsets sat on an empty classic group of its id) loads unchanged: every group
comes back as the kind it was, with its offsets, and nothing else appears.

``data/store-main-74b5e3d.sqlite3`` was written by that commit's state machine and
SQLite store: a Stable classic group "group" with two offsets, a consumer group "kip848"
with two members and one offset, a "simple" group of offsets only, a classic group
"converted" that became a consumer group once empty, and a consumer group "gone" that was
deleted.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from coordinator.group import GroupConfig, GroupCoordinator
from coordinator.group.classic.group import ClassicGroup
from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.records import Record
from coordinator.store.sqlite import SqliteStore

STORE = Path(__file__).parent / "data" / "store-main-74b5e3d.sqlite3"


def _load(tmp_path: Path) -> GroupCoordinator[object]:
    shutil.copy(STORE, tmp_path / SqliteStore.FILENAME)
    tmp_path.chmod(0o700)

    async def read() -> list[Record]:
        store = SqliteStore(tmp_path)
        state = await store.open()
        await store.close()
        return state.records

    records = asyncio.run(read())
    topics = {"orders": 6, "audit": 2}
    co: GroupCoordinator[object] = GroupCoordinator(
        GroupConfig(),
        topic_partitions=lambda t: topics.get(t, 0),
        topic_names=lambda: list(topics),
    )
    co.load(records, 1_000_000)
    return co


def test_every_group_comes_back_as_the_kind_it_was(tmp_path: Path) -> None:
    co = _load(tmp_path)
    kinds = {group_id: type(g) for group_id, g in co.groups.items()}
    assert kinds == {
        "group": ClassicGroup,
        "kip848": ConsumerGroup,
        "simple": ClassicGroup,
        "converted": ConsumerGroup,
    }
    assert sorted(co.consumer_group("kip848").members) == ["a", "b"]  # type: ignore[union-attr]
    assert co.stats().consumer_members == 3
    listed = {g.group_id: g.group_type for g in co.list_groups([], [])}
    assert listed == {
        "group": "classic",
        "simple": "classic",
        "kip848": "consumer",
        "converted": "consumer",
    }


def test_offsets_stay_with_their_group_whatever_its_kind(tmp_path: Path) -> None:
    co = _load(tmp_path)

    def fetched(group_id: str) -> dict[tuple[str, int], int]:
        result = co.fetch_offsets(group_id, None, 1_000_000)
        assert result.error_code == 0
        return {(t.topic, p.partition): p.offset for t in result.topics for p in t.partitions}

    assert fetched("group") == {("orders", 0): 10, ("orders", 1): 11}
    assert fetched("kip848") == {("orders", 2): 22}
    assert fetched("simple") == {("audit", 0): 7}
    assert fetched("gone") == {}
