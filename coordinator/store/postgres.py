"""The shared store: PostgreSQL through asyncpg (``--store postgres --database-url``).

The same interface and the same group commit as the SQLite store: batches queued while a
transaction is running are applied, in order, in the next one, so N concurrent
OffsetCommits cost one round trip and one commit, not N. A batch's future resolves only
after its COMMIT returned. asyncpg runs on the daemon's own event loop: no thread.

The schema is versioned: numbered migrations run at start, under an advisory lock, so
several nodes starting together migrate once.
"""

from __future__ import annotations

import asyncio
import json
from itertools import groupby
from typing import Any, assert_never, cast

import asyncpg

from ..accounts import AclBinding, Operation, PatternType, Permission, ResourceType, ScramCredential
from ..errors import StartupError
from ..group.records import (
    GroupDeletedRecord,
    GroupMetadataRecord,
    HeartbeatRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
    Record,
)
from .base import LoadedState, SecurityRows, Store, Write
from .snapshots import snapshot_from_json, snapshot_to_json

# Numbered migrations, applied in order at start; coordinator_schema records the last.
MIGRATIONS: list[str] = [
    # 1: offsets, group snapshots, members' checkpointed heartbeats, virtual topics, users
    # (SCRAM credentials, never passwords) and ACL bindings: what the SQLite store keeps.
    """
    CREATE TABLE offsets (
        group_id text NOT NULL,
        topic text NOT NULL,
        partition integer NOT NULL,
        committed_offset bigint NOT NULL,
        leader_epoch integer NOT NULL,
        metadata text NOT NULL,
        commit_timestamp_ms bigint NOT NULL,
        expire_timestamp_ms bigint,
        PRIMARY KEY (group_id, topic, partition)
    );
    CREATE TABLE groups (
        group_id text PRIMARY KEY,
        data text NOT NULL
    );
    CREATE TABLE member_heartbeats (
        group_id text NOT NULL,
        member_id text NOT NULL,
        last_heartbeat_ms bigint NOT NULL,
        PRIMARY KEY (group_id, member_id)
    );
    CREATE TABLE topics (
        name text PRIMARY KEY,
        partitions integer NOT NULL
    );
    CREATE TABLE scram_credentials (
        username text NOT NULL,
        mechanism text NOT NULL,
        salt bytea NOT NULL,
        iterations integer NOT NULL,
        stored_key bytea NOT NULL,
        server_key bytea NOT NULL,
        PRIMARY KEY (username, mechanism)
    );
    CREATE TABLE acls (
        principal text NOT NULL,
        resource_type integer NOT NULL,
        resource_name text NOT NULL,
        pattern_type integer NOT NULL,
        operation integer NOT NULL,
        permission integer NOT NULL,
        host text NOT NULL,
        PRIMARY KEY (principal, resource_type, resource_name, pattern_type, operation,
                     permission, host)
    );
    """,
]

#: pg_advisory_xact_lock key for migrations: one node migrates, the others wait and see.
_MIGRATION_LOCK = 0x6772_6F75_7063_6F  # "groupco"


async def migrate(conn: asyncpg.Connection) -> int:
    """Bring the schema to the newest version; returns it."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute("CREATE TABLE IF NOT EXISTS coordinator_schema (version integer)")
        version = await conn.fetchval("SELECT max(version) FROM coordinator_schema") or 0
        if version > len(MIGRATIONS):
            raise StartupError(
                f"the database has schema version {version}; this daemon knows up to"
                f" {len(MIGRATIONS)}: upgrade the daemon"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await conn.execute(script)
            await conn.execute("INSERT INTO coordinator_schema (version) VALUES ($1)", number)
    return len(MIGRATIONS)


class PostgresStore(Store):
    def __init__(self, database_url: str, pool_size: int = 4) -> None:
        self.database_url = database_url
        self.pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._queued: list[tuple[Write, asyncio.Future[None]]] = []
        self._writing = False
        self._writer: asyncio.Task[None] | None = None
        self._idle: asyncio.Future[None] | None = None  # close() waits on it
        self.transactions = 0

    async def open(self) -> LoadedState:
        try:
            self._pool = await asyncpg.create_pool(
                self.database_url, min_size=1, max_size=self.pool_size
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StartupError(f"cannot reach the database: {exc}") from None
        async with self._pool.acquire() as conn:
            await migrate(conn)
            return await _load(conn)

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the store is not open")
        return self._pool

    async def read_security(self) -> SecurityRows:
        async with self.pool.acquire() as conn:
            return await _read_security(conn)

    def write(self, batch: Write) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queued.append((batch, fut))
        if not self._writing:
            self._writing = True
            self._writer = loop.create_task(self._drain())
        return fut

    async def _drain(self) -> None:
        """The one writer: everything queued goes into the next transaction."""
        try:
            while self._queued:
                taken, self._queued = self._queued, []
                try:
                    await self._commit([batch for batch, _ in taken])
                except Exception as exc:
                    for _, fut in taken:
                        if not fut.done():
                            fut.set_exception(exc)
                else:
                    for _, fut in taken:
                        if not fut.done():
                            fut.set_result(None)
        finally:
            self._writing = False
            if self._idle is not None and not self._idle.done():
                self._idle.set_result(None)

    async def _commit(self, batches: list[Write]) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            for batch in batches:
                await _apply(conn, batch)
        self.transactions += 1

    async def close(self) -> None:
        if self._writing:
            self._idle = asyncio.get_running_loop().create_future()
            await self._idle  # the writer drains what is queued, then says so
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


async def _load(conn: asyncpg.Connection) -> LoadedState:
    state = LoadedState()
    for row in await conn.fetch("SELECT group_id, data FROM groups"):
        state.records.append(snapshot_from_json(row["group_id"], json.loads(row["data"])))
    for row in await conn.fetch(
        "SELECT group_id, member_id, last_heartbeat_ms FROM member_heartbeats"
    ):
        state.records.append(HeartbeatRecord(*row))
    for row in await conn.fetch(
        "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata,"
        " commit_timestamp_ms, expire_timestamp_ms FROM offsets"
    ):
        state.records.append(OffsetCommitRecord(*row))
    state.topics = [(r["name"], r["partitions"]) for r in await conn.fetch("SELECT * FROM topics")]
    state.security = await _read_security(conn)
    return state


async def _read_security(conn: asyncpg.Connection) -> SecurityRows:
    credentials = tuple(
        ScramCredential(*row)
        for row in await conn.fetch(
            "SELECT username, mechanism, salt, iterations, stored_key, server_key"
            " FROM scram_credentials ORDER BY username, mechanism"
        )
    )
    acls = tuple(
        AclBinding(
            principal=principal,
            resource_type=ResourceType(rtype),
            resource_name=name,
            pattern_type=PatternType(ptype),
            operation=Operation(op),
            permission=Permission(perm),
            host=host,
        )
        for principal, rtype, name, ptype, op, perm, host in await conn.fetch(
            "SELECT principal, resource_type, resource_name, pattern_type, operation,"
            " permission, host FROM acls ORDER BY resource_type, resource_name, principal"
        )
    )
    return SecurityRows(credentials, acls)


def _acl_row(a: AclBinding) -> tuple[str, int, str, int, int, int, str]:
    return (
        a.principal,
        int(a.resource_type),
        a.resource_name,
        int(a.pattern_type),
        int(a.operation),
        int(a.permission),
        a.host,
    )


async def _apply_security(conn: asyncpg.Connection, batch: Write) -> None:
    for user, mechanism in batch.deleted_credentials:
        if mechanism is None:
            await conn.execute("DELETE FROM scram_credentials WHERE username = $1", user)
        else:
            await conn.execute(
                "DELETE FROM scram_credentials WHERE username = $1 AND mechanism = $2",
                user,
                mechanism,
            )
    if batch.credentials:
        await conn.executemany(
            "INSERT INTO scram_credentials VALUES ($1, $2, $3, $4, $5, $6)"
            " ON CONFLICT (username, mechanism) DO UPDATE SET salt = excluded.salt,"
            " iterations = excluded.iterations, stored_key = excluded.stored_key,"
            " server_key = excluded.server_key",
            [
                (c.username, c.mechanism, c.salt, c.iterations, c.stored_key, c.server_key)
                for c in batch.credentials
            ],
        )
    if batch.deleted_acls:
        await conn.executemany(
            "DELETE FROM acls WHERE principal = $1 AND resource_type = $2"
            " AND resource_name = $3 AND pattern_type = $4 AND operation = $5"
            " AND permission = $6 AND host = $7",
            [_acl_row(a) for a in batch.deleted_acls],
        )
    if batch.acls:
        await conn.executemany(
            "INSERT INTO acls VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            [_acl_row(a) for a in batch.acls],
        )


async def _apply(conn: asyncpg.Connection, batch: Write) -> None:
    await _apply_security(conn, batch)
    if batch.topics:
        await conn.executemany(
            "INSERT INTO topics (name, partitions) VALUES ($1, $2)"
            " ON CONFLICT (name) DO UPDATE SET partitions = excluded.partitions",
            batch.topics,
        )
    # In order; a run of records of one kind is one statement (a commit storm is a run of
    # offsets).
    for _kind, run in groupby(batch.records, type):
        await _apply_run(conn, list(run))


async def _apply_run(conn: asyncpg.Connection, records: list[Record]) -> None:
    first = records[0]
    match first:
        case OffsetCommitRecord():
            commits = cast(list[OffsetCommitRecord], records)
            await conn.executemany(_UPSERT_OFFSET, [_offset_row(r) for r in commits])
        case GroupMetadataRecord():
            snapshots = cast(list[GroupMetadataRecord], records)
            rows = [(r.group_id, json.dumps(snapshot_to_json(r))) for r in snapshots]
            await conn.executemany(_UPSERT_GROUP, rows)
            # A snapshot carries its members' heartbeats; older checkpoints are moot.
            await conn.executemany(_DELETE_HEARTBEATS, [(g,) for g, _data in rows])
        case OffsetDeleteRecord():
            deletes = cast(list[OffsetDeleteRecord], records)
            await conn.executemany(
                "DELETE FROM offsets WHERE group_id = $1 AND topic = $2 AND partition = $3",
                [(r.group_id, r.topic, r.partition) for r in deletes],
            )
        case GroupDeletedRecord():
            gone = [(r.group_id,) for r in cast(list[GroupDeletedRecord], records)]
            await conn.executemany("DELETE FROM offsets WHERE group_id = $1", gone)
            await conn.executemany("DELETE FROM groups WHERE group_id = $1", gone)
            await conn.executemany(_DELETE_HEARTBEATS, gone)
        case HeartbeatRecord():
            beats = cast(list[HeartbeatRecord], records)
            await conn.executemany(
                "INSERT INTO member_heartbeats VALUES ($1, $2, $3)"
                " ON CONFLICT (group_id, member_id) DO UPDATE SET"
                " last_heartbeat_ms = excluded.last_heartbeat_ms",
                [(r.group_id, r.member_id, r.last_heartbeat_ms) for r in beats],
            )
        case _:
            assert_never(first)


_UPSERT_OFFSET = (
    "INSERT INTO offsets VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    " ON CONFLICT (group_id, topic, partition) DO UPDATE SET"
    " committed_offset = excluded.committed_offset,"
    " leader_epoch = excluded.leader_epoch, metadata = excluded.metadata,"
    " commit_timestamp_ms = excluded.commit_timestamp_ms,"
    " expire_timestamp_ms = excluded.expire_timestamp_ms"
)
_UPSERT_GROUP = (
    "INSERT INTO groups (group_id, data) VALUES ($1, $2)"
    " ON CONFLICT (group_id) DO UPDATE SET data = excluded.data"
)
_DELETE_HEARTBEATS = "DELETE FROM member_heartbeats WHERE group_id = $1"


def _offset_row(r: OffsetCommitRecord) -> tuple[Any, ...]:
    return (
        r.group_id,
        r.topic,
        r.partition,
        r.offset,
        r.leader_epoch,
        r.metadata,
        r.commit_timestamp_ms,
        r.expire_timestamp_ms,
    )
