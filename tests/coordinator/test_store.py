"""The SQLite store: what is written is there after reopening; batches commit together."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from pathlib import Path

from coordinator.store import GroupRow, OffsetRow, SqliteStore, Write
from coordinator.store.sqlite import MIGRATIONS


def offset(group: str, topic: str, partition: int, value: int) -> OffsetRow:
    return OffsetRow(group, topic, partition, value, -1, f"m{value}", 1000, None)


async def test_writes_survive_reopening(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    assert (await store.open()).offsets == []
    await store.write(
        Write(
            offsets=[offset("g", "t", 0, 5), offset("g", "t", 1, 6)],
            groups=[GroupRow("g", {"generation_id": 3, "members": []})],
            topics=[("t", 2)],
        )
    )
    await store.write(Write(offsets=[offset("g", "t", 0, 9)]))
    await store.close()

    reopened = SqliteStore(tmp_path)
    state = await reopened.open()
    assert sorted((o.partition, o.committed_offset, o.metadata) for o in state.offsets) == [
        (0, 9, "m9"),
        (1, 6, "m6"),
    ]
    assert state.groups == [GroupRow("g", {"generation_id": 3, "members": []})]
    assert state.topics == [("t", 2)]
    await reopened.close()


async def test_deleting_a_group_deletes_its_offsets(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    await store.write(
        Write(
            offsets=[offset("a", "t", 0, 1), offset("b", "t", 0, 2)],
            groups=[GroupRow("a", {}), GroupRow("b", {})],
        )
    )
    await store.write(Write(deleted_groups=["a"], deleted_offsets=[("b", "t", 0)]))
    await store.close()
    state = await SqliteStore(tmp_path).open()
    assert state.offsets == []
    assert [g.group_id for g in state.groups] == ["b"]


async def test_concurrent_batches_share_transactions(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    futures = [store.write(Write(offsets=[offset("g", "t", p, p)])) for p in range(200)]
    await asyncio.gather(*futures)
    assert store.transactions < 200  # group commit: later batches merged while one ran
    await store.close()
    assert len((await SqliteStore(tmp_path).open()).offsets) == 200


async def test_schema_is_migrated_and_versioned(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    await store.close()
    conn = sqlite3.connect(tmp_path / SqliteStore.FILENAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_data_directory_and_store_files_are_private_to_the_daemons_user(
    tmp_path: Path,
) -> None:
    # The store holds SCRAM salts and keys: nobody else on the host may read them, even
    # under a permissive umask or with a directory created before this version.
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    old = os.umask(0o022)
    try:
        store = SqliteStore(data)
        await store.open()
        await store.write(Write(offsets=[offset("g", "t", 0, 1)]))
        await store.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = list(data.iterdir())
    assert files
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {f.name: 0o600 for f in files}
