"""Topic ids look random, as Kafka's do (a guessed name's id cannot be computed), yet stay
the same across restarts and between the nodes of a cluster; topics stored before keep
their ids."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from coordinator.settings.config import Settings
from coordinator.shared.catalog import Catalog, topic_id_for
from coordinator.shell.server import Server
from coordinator.store import Store
from coordinator.store.postgres import PostgresStore
from coordinator.store.sqlite import MIGRATIONS, SqliteStore
from tests.postgres_server import PostgresServer


async def ids_of(settings: Settings) -> dict[str, uuid.UUID]:
    srv = Server(settings)
    await srv.start()
    try:
        assert srv.runtime is not None
        return {t.name: t.topic_id for t in srv.runtime.catalog.all()}
    finally:
        await srv.stop()


async def test_ids_are_not_derived_from_the_name_alone_and_survive_restarts(
    tmp_path: Path,
) -> None:
    s = Settings(listen=("127.0.0.1", 0), data_dir=tmp_path, topics=(("orders", 3),))
    first = await ids_of(s)
    assert first["orders"] != topic_id_for("orders")  # not computable from the name
    assert await ids_of(s) == first  # the same after a restart
    elsewhere = await ids_of(Settings(listen=("127.0.0.1", 0), data_dir=tmp_path / "other",
                                      topics=(("orders", 3),)))  # fmt: skip
    assert elsewhere["orders"] != first["orders"]  # another installation, another id


async def test_topics_stored_before_keep_their_ids(tmp_path: Path) -> None:
    # A data directory of the schema before topic id keys, holding a topic.
    conn = sqlite3.connect(tmp_path / SqliteStore.FILENAME)
    for number, script in enumerate(MIGRATIONS[:4], start=1):
        conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
    conn.execute("INSERT INTO topics (name, partitions) VALUES ('legacy', 2)")
    conn.commit()
    conn.close()
    s = Settings(listen=("127.0.0.1", 0), data_dir=tmp_path, topics=(("fresh", 1),))
    ids = await ids_of(s)
    assert ids["legacy"] == topic_id_for("legacy")  # clients may hold it: unchanged
    assert ids["fresh"] != topic_id_for("fresh")
    assert await ids_of(s) == ids


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_every_opening_of_one_store_gets_the_same_key(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two nodes of a cluster open the same database: the same key, so the same ids."""
    new: Callable[[], Store]
    if kind == "sqlite":
        new = lambda: SqliteStore(tmp_path, exclusive=False)  # noqa: E731
    else:
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.create_database(request.node.name)
        new = lambda: PostgresStore(url)  # noqa: E731
    keys = []
    for _ in range(2):
        store = new()
        try:
            keys.append((await store.open()).topic_id_key)
        finally:
            await store.close()
    assert keys[0] is not None and len(keys[0]) == 32 and keys[0] == keys[1]
    one, two = Catalog(), Catalog()
    one.use_id_key(keys[0])
    two.use_id_key(keys[1])
    assert one.create("t", 1).topic_id == two.create("t", 1).topic_id
