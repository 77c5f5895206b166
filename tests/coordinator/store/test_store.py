"""The stores (SQLite, and PostgreSQL on a real server the tests start): what is written is
there after reopening, and concurrent batches commit together."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from coordinator.group.records import (
    GroupDeletedRecord,
    GroupMetadataRecord,
    HeartbeatRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
)
from coordinator.shared.errors import StartupError
from coordinator.store import LoadedState, SqliteStore, Store, Write
from coordinator.store.dialect import SQLITE
from coordinator.store.postgres import PostgresStore
from coordinator.store.sqlite import MIGRATIONS
from coordinator.store.tables import statements
from tests.postgres_server import PostgresServer

StoreFactory = Callable[[], Store]


@pytest.fixture(params=["sqlite", "postgres"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Opens the same store again each call: one SQLite file, or one PostgreSQL database."""
    if request.param == "sqlite":
        return lambda: SqliteStore(tmp_path)
    server: PostgresServer = request.getfixturevalue("postgres")
    url = server.create_database(request.node.name)
    return lambda: PostgresStore(url)


def offset(group: str, topic: str, partition: int, value: int) -> OffsetCommitRecord:
    return OffsetCommitRecord(group, topic, partition, value, -1, f"m{value}", 1000, None)


def member(member_id: str, last_heartbeat_ms: int) -> MemberRecord:
    return MemberRecord(
        member_id,
        None,
        "client",
        "/10.0.0.1",
        300_000,
        45_000,
        "consumer",
        [("range", b"\x00\x01")],
        b"assigned",
        last_heartbeat_ms,
    )


def snapshot(group: str, generation: int, *members: MemberRecord) -> GroupMetadataRecord:
    return GroupMetadataRecord(
        group,
        "Stable",
        1000,
        "consumer",
        "range",
        generation,
        members[0].member_id if members else None,
        list(members),
    )


async def reopened(new_store: StoreFactory) -> LoadedState:
    store = new_store()
    try:
        return await store.open()
    finally:
        await store.close()


def offsets(state: LoadedState) -> list[OffsetCommitRecord]:
    return [r for r in state.records if isinstance(r, OffsetCommitRecord)]


def snapshots(state: LoadedState) -> list[GroupMetadataRecord]:
    return [r for r in state.records if isinstance(r, GroupMetadataRecord)]


async def test_writes_survive_reopening(new_store: StoreFactory) -> None:
    store = new_store()
    assert (await store.open()).records == []
    group = snapshot("g", 3, member("m-1", 2000))
    await store.write(
        Write(records=[offset("g", "t", 0, 5), offset("g", "t", 1, 6), group], topics=[("t", 2)])
    )
    await store.write(Write(records=[offset("g", "t", 0, 9)]))
    await store.close()

    reopened = new_store()
    state = await reopened.open()
    assert sorted((o.partition, o.offset, o.metadata) for o in offsets(state)) == [
        (0, 9, "m9"),
        (1, 6, "m6"),
    ]
    assert snapshots(state) == [group]  # the same record back, bytes and all
    assert state.topics == [("t", 2)]
    await reopened.close()


async def test_deleting_a_group_deletes_its_offsets(new_store: StoreFactory) -> None:
    store = new_store()
    await store.open()
    await store.write(
        Write(
            records=[
                offset("a", "t", 0, 1),
                offset("b", "t", 0, 2),
                snapshot("a", 1),
                snapshot("b", 1),
                HeartbeatRecord("a", "m-1", 5000),
            ]
        )
    )
    await store.write(Write(records=[GroupDeletedRecord("a"), OffsetDeleteRecord("b", "t", 0)]))
    await store.close()
    state = await reopened(new_store)
    assert offsets(state) == []
    assert [g.group_id for g in snapshots(state)] == ["b"]
    assert not any(isinstance(r, HeartbeatRecord) for r in state.records)


async def test_heartbeat_checkpoints_load_until_the_next_snapshot(new_store: StoreFactory) -> None:
    store = new_store()
    await store.open()
    await store.write(
        Write(records=[snapshot("g", 1, member("m-1", 1000)), HeartbeatRecord("g", "m-1", 4000)])
    )
    await store.close()
    state = await reopened(new_store)
    assert [r for r in state.records if isinstance(r, HeartbeatRecord)] == [
        HeartbeatRecord("g", "m-1", 4000)
    ]
    store = new_store()
    await store.open()
    await store.write(Write(records=[snapshot("g", 2, member("m-1", 5000))]))
    await store.close()
    state = await reopened(new_store)
    assert not any(isinstance(r, HeartbeatRecord) for r in state.records)


async def test_concurrent_batches_share_transactions(new_store: StoreFactory) -> None:
    store = new_store()
    await store.open()
    futures = [store.write(Write(records=[offset("g", "t", p, p)])) for p in range(200)]
    await asyncio.gather(*futures)
    assert store.transactions < 200  # group commit: later batches merged while one ran
    await store.close()
    assert len(offsets(await reopened(new_store))) == 200


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
        await store.write(Write(records=[offset("g", "t", 0, 1)]))
        await store.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = list(data.iterdir())
    assert files
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {f.name: 0o600 for f in files}


async def test_offset_metadata_keeps_any_string_kafka_can_send(new_store: StoreFactory) -> None:
    # librdkafka's metadata can end in U+0000, which PostgreSQL's text type refuses.
    odd = "meta\x00 \u00e9\U0001f600"
    store = new_store()
    await store.open()
    await store.write(Write(records=[OffsetCommitRecord("g", "t", 0, 1, -1, odd, 5, None)]))
    await store.close()
    assert [o.metadata for o in offsets(await reopened(new_store))] == [odd]


async def test_a_second_daemon_cannot_open_a_data_directory_in_use(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path)
    await first.open()
    with pytest.raises(StartupError, match=f"in use by another daemon \\(pid {os.getpid()}\\)"):
        await SqliteStore(tmp_path).open()
    beside = SqliteStore(tmp_path, exclusive=False)  # the users/acls commands
    await beside.open()
    await beside.close()
    await first.write(Write(records=[offset("g", "t", 0, 1)]))  # undisturbed
    await first.close()
    second = SqliteStore(tmp_path)  # released with the first
    await second.open()
    await second.close()


async def test_commits_of_one_partition_written_together_store_the_last(
    new_store: StoreFactory,
) -> None:
    """A member's pipelined auto-commits written in one batch are one row per partition
    (the last commit of each), and a deletion between commits keeps its place."""
    batch = Write(
        records=[
            offset("g", "t", 0, 1),
            offset("g", "t", 1, 5),
            offset("g", "t", 0, 2),
            offset("g", "u", 0, 7),
            offset("g", "t", 0, 3),
            OffsetDeleteRecord("g", "u", 0),
            offset("g", "t", 1, 6),
        ]
    )
    (_upsert, rows), *_ = statements(batch, SQLITE)
    assert [row[:4] for row in rows] == [("g", "t", 0, 3), ("g", "t", 1, 5), ("g", "u", 0, 7)]
    store = new_store()
    await store.open()
    await store.write(batch)
    await store.close()
    stored = {
        (o.topic, o.partition): (o.offset, o.metadata) for o in offsets(await reopened(new_store))
    }
    assert stored == {("t", 0): (3, "m3"), ("t", 1): (6, "m6")}
