"""Every record type replayed through memory, SQLite and PostgreSQL: a coordinator that
loads what a store returns holds what one that replayed the records themselves holds. And
the stores main 0f96646 wrote (SQLite, a PostgreSQL dump) load into the same."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest

from coordinator.group.frozen import frozen
from coordinator.group.records import ConsumerGroupRecord, Record
from coordinator.store import SqliteStore, Store, Write, tables
from coordinator.store.postgres import PostgresStore
from coordinator.store.snapshots import Document
from tests.coordinator.store.every_record import RECORDS, loaded, shard_view
from tests.postgres_server import PostgresServer, server_binary

DATA = Path(__file__).parent / "data"


async def _written_and_read(
    new_store: Callable[[], Store], batches: list[list[Record]]
) -> list[Record]:
    store = new_store()
    await store.open()
    try:
        await asyncio.gather(*(store.write(Write(records=b)) for b in batches))
    finally:
        await store.close()
    store = new_store()
    state = await store.open()
    await store.close()
    return state.records


def test_every_record_type_is_declared_stored_and_replayed_here() -> None:
    """A record type added to the union is written by the store (store/tables.py) and
    exercised by the replays below: the test data must grow with it."""
    types = set(get_args(Record))
    assert set(tables.WRITES) == types
    assert {type(r) for r in RECORDS} == types


def _batches(one_each: bool) -> list[list[Record]]:
    """One batch per record, or every record in one (one statement per run of a kind)."""
    return [[r] for r in RECORDS] if one_each else [list(RECORDS)]


@pytest.mark.parametrize("one_each", [True, False])
def test_sqlite_loads_what_memory_replays(tmp_path: Path, one_each: bool) -> None:
    records = asyncio.run(_written_and_read(lambda: SqliteStore(tmp_path), _batches(one_each)))
    assert shard_view(loaded(records)) == shard_view(loaded(RECORDS))


@pytest.mark.parametrize("one_each", [True, False])
def test_postgres_loads_what_memory_replays(postgres: PostgresServer, one_each: bool) -> None:
    url = postgres.create_database(f"replay_{one_each}")
    records = asyncio.run(_written_and_read(lambda: PostgresStore(url), _batches(one_each)))
    assert shard_view(loaded(records)) == shard_view(loaded(RECORDS))


def test_a_cluster_node_loads_its_partitions_as_memory_replays(postgres: PostgresServer) -> None:
    url = postgres.create_database("replay_partitions")

    async def run() -> list[Record]:
        await _written_and_read(lambda: PostgresStore(url, partitions=5), _batches(True))
        clustered = PostgresStore(url, partitions=5, clustered=True)
        await clustered.open()
        try:
            return await clustered.load_partitions(list(range(5)))
        finally:
            await clustered.close()

    assert shard_view(loaded(asyncio.run(run()))) == shard_view(loaded(RECORDS))


def test_the_sqlite_store_main_wrote_loads_unchanged(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    shutil.copy(DATA / "store-main-0f96646.sqlite3", tmp_path / SqliteStore.FILENAME)

    async def read() -> list[Record]:
        store = SqliteStore(tmp_path)
        state = await store.open()
        await store.close()
        return state.records

    assert shard_view(loaded(asyncio.run(read()))) == shard_view(loaded(RECORDS))


def test_the_postgres_schema_main_wrote_loads_unchanged(postgres: PostgresServer) -> None:
    url = postgres.create_database("from_main")
    psql = shutil.which("psql") or server_binary("psql")
    subprocess.run(
        [
            psql,
            "-q",
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            url,
            "-f",
            str(DATA / "store-main-0f96646.pg.sql"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )

    async def read() -> list[Record]:
        store = PostgresStore(url)
        state = await store.open()
        await store.close()
        return state.records

    assert shard_view(loaded(asyncio.run(read()))) == shard_view(loaded(RECORDS))


@frozen
class _GroupWithANewField(ConsumerGroupRecord):
    """As if ``ConsumerGroupRecord`` had gained a field (records.py, with a default)."""

    assignor_hint: str | None = None


def test_a_field_added_to_a_record_is_stored_and_read_back_with_no_store_change() -> None:
    document = Document(_GroupWithANewField, ("group_id",), "consumer group")
    record = _GroupWithANewField("g", 3, 2, {"orders": 6}, assignor_hint="range")
    assert document.loads(document.dumps(record), "g") == record
    # A document stored before the field existed reads back with its default.
    older = tables.CONSUMER_GROUP.dumps(ConsumerGroupRecord("g", 3, 2, {"orders": 6}))
    assert document.loads(older, "g") == _GroupWithANewField("g", 3, 2, {"orders": 6})
