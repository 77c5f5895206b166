"""The default store: one SQLite database in the data directory (WAL, synchronous=FULL).

Writes go to one writer thread. Batches queued while a transaction is running are applied,
in order, in the next one (group commit), so N concurrent OffsetCommits cost one fsync,
not N. A batch's future resolves only after its COMMIT returned.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import secrets
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from ..shared.errors import StartupError
from ..shared.private_files import private_dir, private_file
from . import tables
from .base import LoadedState, SecurityRows, Store, Write
from .dialect import SQLITE

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
        for query, record in tables.reads(SQLITE, by_partition=False):
            state.records.extend(record(row) for row in conn.execute(query))
        rows = conn.execute(tables.TOPICS_QUERY).fetchall()
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
                    for statement, rows in tables.statements(batch, SQLITE):
                        conn.executemany(statement, rows)
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
    credentials, acls = (conn.execute(query) for query in tables.SECURITY_QUERIES)
    return tables.security_rows(credentials, acls)


def _probe_writable(directory: Path) -> None:
    """Write, sync and remove a small file: fails on a read-only or full filesystem."""
    probe = directory / ".write-probe"
    with open(probe, "wb") as f:
        f.write(b"\0" * 4096)
        f.flush()
        os.fsync(f.fileno())
    probe.unlink()
