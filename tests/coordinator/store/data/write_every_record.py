"""How ``store-main-0f96646.*`` were made (run from a checkout of main 0f96646):

    python -m tests.coordinator.store.data.write_every_record DIR POSTGRES_URL

writes ``every_record.RECORDS`` through that commit's SQLite store into DIR and through its
PostgreSQL store into the (empty) database, one batch per record; the database was then
dumped with ``pg_dump --no-owner --no-privileges``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from coordinator.store import SqliteStore, Store, Write
from coordinator.store.postgres import PostgresStore
from tests.coordinator.store.every_record import RECORDS


async def write_all(store: Store) -> None:
    await store.open()
    try:
        for record in RECORDS:
            await store.write(Write(records=[record]))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(write_all(SqliteStore(Path(sys.argv[1]))))
    asyncio.run(write_all(PostgresStore(sys.argv[2])))
