"""The default store: one SQLite database in the data directory (WAL, synchronous=FULL).

Writes go to one writer thread. Batches queued while a transaction is running are applied,
in order, in the next one (group commit), so N concurrent OffsetCommits cost one fsync,
not N. A batch's future resolves only after its COMMIT returned.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import secrets
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from pathlib import Path
from typing import IO, assert_never, cast

from ..accounts import AclBinding, Operation, PatternType, Permission, ResourceType, ScramCredential
from ..errors import StartupError
from ..group.records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    GroupConfigRecord,
    GroupDeletedRecord,
    GroupMetadataRecord,
    HeartbeatRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
    Record,
)
from ..private_files import private_dir, private_file
from .base import LoadedState, SecurityRows, Store, Write
from .snapshots import (
    consumer_group_from_json,
    consumer_group_to_json,
    consumer_member_from_json,
    consumer_member_to_json,
    snapshot_from_json,
    snapshot_to_json,
)

#: In the data directory: locked by the daemon that uses it (its pid inside).
LOCK_FILE = ".lock"

# Numbered migrations, applied in order at start; PRAGMA user_version records the last.
MIGRATIONS: list[str] = [
    # 1: offsets, group snapshots, deletions, virtual topics.
    """
    CREATE TABLE offsets (
        group_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        committed_offset INTEGER NOT NULL,
        leader_epoch INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        commit_timestamp_ms INTEGER NOT NULL,
        expire_timestamp_ms INTEGER,
        PRIMARY KEY (group_id, topic, partition)
    ) WITHOUT ROWID;
    CREATE TABLE groups (
        group_id TEXT PRIMARY KEY,
        data TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE topics (
        name TEXT PRIMARY KEY,
        partitions INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 2: members' last heartbeats, checkpointed between group snapshots (a reload grants a
    # restored member only what was left of its session).
    """
    CREATE TABLE member_heartbeats (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        last_heartbeat_ms INTEGER NOT NULL,
        PRIMARY KEY (group_id, member_id)
    ) WITHOUT ROWID;
    """,
    # 3: users as SCRAM credentials (RFC 5802: salt, iterations, StoredKey, ServerKey; never a
    # password) and ACL bindings.
    """
    CREATE TABLE scram_credentials (
        username TEXT NOT NULL,
        mechanism TEXT NOT NULL,
        salt BLOB NOT NULL,
        iterations INTEGER NOT NULL,
        stored_key BLOB NOT NULL,
        server_key BLOB NOT NULL,
        PRIMARY KEY (username, mechanism)
    ) WITHOUT ROWID;
    CREATE TABLE acls (
        principal TEXT NOT NULL,
        resource_type INTEGER NOT NULL,
        resource_name TEXT NOT NULL,
        pattern_type INTEGER NOT NULL,
        operation INTEGER NOT NULL,
        permission INTEGER NOT NULL,
        host TEXT NOT NULL,
        PRIMARY KEY (principal, resource_type, resource_name, pattern_type, operation,
                     permission, host)
    ) WITHOUT ROWID;
    """,
    # 4: KIP-848 consumer groups and their members (JSON); their offsets are in `offsets`.
    """
    CREATE TABLE consumer_groups (
        group_id TEXT PRIMARY KEY,
        data TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE consumer_group_members (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (group_id, member_id)
    ) WITHOUT ROWID;
    """,
    # 5: the key topic ids are derived with (catalog.py); the topics stored until now keep
    # the ids they had (UUIDv5 of the name).
    """
    CREATE TABLE topic_id_key (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        key BLOB NOT NULL
    );
    ALTER TABLE topics ADD COLUMN unkeyed_id INTEGER NOT NULL DEFAULT 0;
    UPDATE topics SET unkeyed_id = 1;
    """,
    # 6: groups' own configs (Kafka's dynamic group configs), JSON.
    """
    CREATE TABLE group_configs (
        group_id TEXT PRIMARY KEY,
        data TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
]


def migrate(conn: sqlite3.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        with conn:
            conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
    return len(MIGRATIONS)


class SqliteStore(Store):
    FILENAME = "coordinator.sqlite3"

    def __init__(self, data_dir: Path, exclusive: bool = True) -> None:
        """``exclusive``: the daemon's store, which locks the directory; the ``users`` and
        ``acls`` commands open it beside a running daemon."""
        self.path = Path(data_dir) / self.FILENAME
        self.exclusive = exclusive
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._conn: sqlite3.Connection | None = None
        self._queued: list[Write] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._writing = False
        self._idle: asyncio.Future[None] | None = None  # close() waits on it
        self._mutex = threading.Lock()
        self._lock: IO[str] | None = None  # the data directory's lock file, held open
        self.transactions = 0

    async def open(self) -> LoadedState:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._open_checked)

    def _open_checked(self) -> LoadedState:
        # A read-only or full data directory is refused now, in one line, rather than
        # found out by the first client whose commit cannot be stored.
        directory = self.path.parent
        try:
            private_dir(directory)
            _probe_writable(directory)
            if self.exclusive:
                self._lock_directory(directory)
            return self._open_sync()
        except (OSError, sqlite3.Error) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StartupError(
                f"the data directory {directory} is not writable: {reason}"
            ) from None

    def _lock_directory(self, directory: Path) -> None:
        """One daemon per data directory, as Kafka locks its log directories: a second one
        is refused at start; the lock goes with the process, however it ends."""
        path = directory / LOCK_FILE
        lock = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o600), "r+")
        private_file(path)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            lock.close()
            raise StartupError(
                f"the data directory {directory} is in use by another daemon (pid {holder})"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        self._lock = lock

    def _open_sync(self) -> LoadedState:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # Before WAL mode: SQLite gives the -wal and -shm files the database file's mode.
        private_file(self.path)
        conn.execute("PRAGMA journal_mode=WAL")
        for suffix in ("-wal", "-shm"):
            private_file(f"{self.path}{suffix}")
        conn.execute("PRAGMA synchronous=FULL")
        migrate(conn)
        self._conn = conn
        state = LoadedState()
        state.records.extend(
            GroupConfigRecord(group_id, json.loads(data))
            for group_id, data in conn.execute("SELECT group_id, data FROM group_configs")
        )
        state.records.extend(
            consumer_group_from_json(group_id, json.loads(data))
            for group_id, data in conn.execute("SELECT group_id, data FROM consumer_groups")
        )
        state.records.extend(
            consumer_member_from_json(group_id, member_id, json.loads(data))
            for group_id, member_id, data in conn.execute(
                "SELECT group_id, member_id, data FROM consumer_group_members"
            )
        )
        state.records.extend(
            snapshot_from_json(group_id, json.loads(data))
            for group_id, data in conn.execute("SELECT group_id, data FROM groups")
        )
        state.records.extend(
            HeartbeatRecord(*row)
            for row in conn.execute(
                "SELECT group_id, member_id, last_heartbeat_ms FROM member_heartbeats"
            )
        )
        state.records.extend(
            OffsetCommitRecord(*row)
            for row in conn.execute(
                "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata,"
                " commit_timestamp_ms, expire_timestamp_ms FROM offsets"
            )
        )
        rows = conn.execute("SELECT name, partitions, unkeyed_id FROM topics").fetchall()
        state.topics = [(n, p) for n, p, _ in rows]
        state.unkeyed_topics = frozenset(n for n, _, unkeyed in rows if unkeyed)
        conn.execute(
            "INSERT OR IGNORE INTO topic_id_key (one, key) VALUES (1, ?)",
            (secrets.token_bytes(32),),
        )
        (state.topic_id_key,) = conn.execute("SELECT key FROM topic_id_key").fetchone()
        state.security = _read_security(conn)
        return state

    async def read_security(self) -> SecurityRows:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._read_security_sync)

    def _read_security_sync(self) -> SecurityRows:
        assert self._conn is not None
        with self._mutex:
            return _read_security(self._conn)

    def write(self, batch: Write) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queued.append(batch)
        self._waiters.append(fut)
        if not self._writing:
            self._start_next(loop)
        return fut

    def _start_next(self, loop: asyncio.AbstractEventLoop) -> None:
        batches, waiters = self._queued, self._waiters
        self._queued, self._waiters = [], []
        if not batches:
            self._writing = False
            if self._idle is not None and not self._idle.done():
                self._idle.set_result(None)
            return
        self._writing = True
        job = loop.run_in_executor(self._executor, self._commit_sync, batches)
        job.add_done_callback(lambda done: self._committed(loop, done, waiters))

    def _committed(
        self,
        loop: asyncio.AbstractEventLoop,
        done: asyncio.Future[None],
        waiters: list[asyncio.Future[None]],
    ) -> None:
        exc = done.exception()
        for fut in waiters:
            if fut.done():
                continue
            if exc is None:
                fut.set_result(None)
            else:
                fut.set_exception(exc)
        self._start_next(loop)

    def _commit_sync(self, batches: list[Write]) -> None:
        conn = self._conn
        assert conn is not None
        with self._mutex:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for batch in batches:
                    _apply(conn, batch)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed COMMIT may already have ended it
                    conn.execute("ROLLBACK")
                raise
            self.transactions += 1

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        if self._writing or self._queued:
            self._idle = loop.create_future()
            await self._idle  # the writer drains what is queued, then says so
        await loop.run_in_executor(self._executor, self._close_sync)
        self._executor.shutdown(wait=True)

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._lock is not None:
            self._lock.close()  # releases the directory
            self._lock = None


def _read_security(conn: sqlite3.Connection) -> SecurityRows:
    credentials = tuple(
        ScramCredential(*row)
        for row in conn.execute(
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
        for principal, rtype, name, ptype, op, perm, host in conn.execute(
            "SELECT principal, resource_type, resource_name, pattern_type, operation,"
            " permission, host FROM acls ORDER BY resource_type, resource_name, principal"
        )
    )
    return SecurityRows(credentials, acls)


def _acl_row(a: AclBinding) -> tuple[str, int, str, int, int, int, str]:
    return (
        a.principal,
        a.resource_type,
        a.resource_name,
        a.pattern_type,
        a.operation,
        a.permission,
        a.host,
    )


def _apply_security(conn: sqlite3.Connection, batch: Write) -> None:
    for user, mechanism in batch.deleted_credentials:
        if mechanism is None:
            conn.execute("DELETE FROM scram_credentials WHERE username = ?", (user,))
        else:
            conn.execute(
                "DELETE FROM scram_credentials WHERE username = ? AND mechanism = ?",
                (user, mechanism),
            )
    if batch.credentials:
        conn.executemany(
            "INSERT OR REPLACE INTO scram_credentials VALUES (?, ?, ?, ?, ?, ?)",
            [
                (c.username, c.mechanism, c.salt, c.iterations, c.stored_key, c.server_key)
                for c in batch.credentials
            ],
        )
    if batch.deleted_acls:
        conn.executemany(
            "DELETE FROM acls WHERE principal = ? AND resource_type = ? AND resource_name = ?"
            " AND pattern_type = ? AND operation = ? AND permission = ? AND host = ?",
            [_acl_row(a) for a in batch.deleted_acls],
        )
    if batch.acls:
        conn.executemany(
            "INSERT OR IGNORE INTO acls VALUES (?, ?, ?, ?, ?, ?, ?)",
            [_acl_row(a) for a in batch.acls],
        )


def _apply(conn: sqlite3.Connection, batch: Write) -> None:
    _apply_security(conn, batch)
    if batch.topics:
        conn.executemany(
            "INSERT INTO topics (name, partitions) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET partitions = excluded.partitions",
            batch.topics,
        )
    # In order; a run of records of one kind is one statement (a commit storm is a run of
    # offsets).
    for _kind, run in groupby(batch.records, type):
        _apply_run(conn, list(run))


def _apply_run(conn: sqlite3.Connection, records: list[Record]) -> None:
    """Records of one kind (``groupby`` made the run), as one statement each."""
    first = records[0]
    match first:
        case OffsetCommitRecord():
            commits = cast(list[OffsetCommitRecord], records)
            conn.executemany(_UPSERT_OFFSET, [_offset_row(r) for r in commits])
        case GroupMetadataRecord():
            snapshots = cast(list[GroupMetadataRecord], records)
            rows = [(r.group_id, json.dumps(snapshot_to_json(r))) for r in snapshots]
            conn.executemany(_UPSERT_GROUP, rows)
            # A snapshot carries its members' heartbeats; older checkpoints are moot.
            conn.executemany(_DELETE_HEARTBEATS, [(g,) for g, _data in rows])
        case OffsetDeleteRecord():
            deletes = cast(list[OffsetDeleteRecord], records)
            conn.executemany(
                "DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                [(r.group_id, r.topic, r.partition) for r in deletes],
            )
        case GroupDeletedRecord():
            gone = [(r.group_id,) for r in cast(list[GroupDeletedRecord], records)]
            conn.executemany("DELETE FROM offsets WHERE group_id = ?", gone)
            conn.executemany("DELETE FROM groups WHERE group_id = ?", gone)
            conn.executemany(_DELETE_HEARTBEATS, gone)
            conn.executemany(_DELETE_CONSUMER_GROUP, gone)
            conn.executemany(_DELETE_CONSUMER_MEMBERS, gone)
        case ConsumerGroupRecord():
            consumer = cast(list[ConsumerGroupRecord], records)
            conn.executemany(
                "INSERT INTO consumer_groups (group_id, data) VALUES (?, ?)"
                " ON CONFLICT (group_id) DO UPDATE SET data = excluded.data",
                [(r.group_id, json.dumps(consumer_group_to_json(r))) for r in consumer],
            )
        case ConsumerMemberRecord():
            members = cast(list[ConsumerMemberRecord], records)
            conn.executemany(
                "INSERT INTO consumer_group_members (group_id, member_id, data)"
                " VALUES (?, ?, ?) ON CONFLICT (group_id, member_id)"
                " DO UPDATE SET data = excluded.data",
                [
                    (r.group_id, r.member_id, json.dumps(consumer_member_to_json(r)))
                    for r in members
                ],
            )
        case ConsumerMemberRemovedRecord():
            removed = cast(list[ConsumerMemberRemovedRecord], records)
            conn.executemany(
                "DELETE FROM consumer_group_members WHERE group_id = ? AND member_id = ?",
                [(r.group_id, r.member_id) for r in removed],
            )
        case ConsumerGroupDeletedRecord():
            forgotten = cast(list[ConsumerGroupDeletedRecord], records)
            conn.executemany(_DELETE_CONSUMER_GROUP, [(r.group_id,) for r in forgotten])
            conn.executemany(_DELETE_CONSUMER_MEMBERS, [(r.group_id,) for r in forgotten])
        case GroupConfigRecord():
            for r in cast(list[GroupConfigRecord], records):
                if r.configs:
                    conn.execute(
                        "INSERT INTO group_configs (group_id, data) VALUES (?, ?)"
                        " ON CONFLICT (group_id) DO UPDATE SET data = excluded.data",
                        (r.group_id, json.dumps(r.configs)),
                    )
                else:
                    conn.execute("DELETE FROM group_configs WHERE group_id = ?", (r.group_id,))
        case HeartbeatRecord():
            beats = cast(list[HeartbeatRecord], records)
            conn.executemany(
                "INSERT INTO member_heartbeats VALUES (?, ?, ?)"
                " ON CONFLICT (group_id, member_id) DO UPDATE SET"
                " last_heartbeat_ms = excluded.last_heartbeat_ms",
                [(r.group_id, r.member_id, r.last_heartbeat_ms) for r in beats],
            )
        case _:
            assert_never(first)


_UPSERT_OFFSET = (
    "INSERT INTO offsets VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (group_id, topic, partition) DO UPDATE SET"
    " committed_offset = excluded.committed_offset,"
    " leader_epoch = excluded.leader_epoch, metadata = excluded.metadata,"
    " commit_timestamp_ms = excluded.commit_timestamp_ms,"
    " expire_timestamp_ms = excluded.expire_timestamp_ms"
)
_UPSERT_GROUP = (
    "INSERT INTO groups (group_id, data) VALUES (?, ?)"
    " ON CONFLICT (group_id) DO UPDATE SET data = excluded.data"
)
_DELETE_HEARTBEATS = "DELETE FROM member_heartbeats WHERE group_id = ?"
_DELETE_CONSUMER_GROUP = "DELETE FROM consumer_groups WHERE group_id = ?"
_DELETE_CONSUMER_MEMBERS = "DELETE FROM consumer_group_members WHERE group_id = ?"


def _offset_row(r: OffsetCommitRecord) -> tuple[object, ...]:
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


def _probe_writable(directory: Path) -> None:
    """Write, sync and remove a small file: fails on a read-only or full filesystem."""
    probe = directory / ".write-probe"
    with open(probe, "wb") as f:
        f.write(b"\0" * 4096)
        f.flush()
        os.fsync(f.fileno())
    probe.unlink()
