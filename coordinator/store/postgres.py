"""The shared store: PostgreSQL through asyncpg (``--store postgres --database-url``).

The same interface and the same group commit as the SQLite store: batches queued while a
transaction is running are applied, in order, in the next one, so N concurrent
OffsetCommits cost one round trip and one commit, not N. A batch's future resolves only
after its COMMIT returned. asyncpg runs on the daemon's own event loop: no thread.

The schema is versioned: numbered migrations run at start, under an advisory lock, so
several nodes starting together migrate once.

In a cluster every row of a group carries its coordinator partition, so a node loads only
the partitions it acquires, and every write is *fenced*: in the same transaction it checks,
holding a share lock on the partition rows, that this node still owns each partition it
writes to with the epoch it acquired it at, and that its lease has not run out. A node that
lost a partition (paused past its lease, cut off) can never overwrite the new owner's state.
Each transaction is also bounded by what is left of the lease (``bounded.py``): a stalled
node's locks are freed by the server before its lease runs out, and a write that completes
after the lease ran out is not reported done (its answer would come from a node that may
no longer be the coordinator).

While the database is unreachable, writes fail at once for a growing interval (0.1 s
doubling up to 2 s) rather than each trying to connect again.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable

import asyncpg

from ..cluster.placement import partition_for
from ..group.handover import GroupHandover
from ..group.records import GroupMetadataRecord, Record
from ..shared.errors import StartupError
from . import bounded, tables
from .base import LoadedState, SecurityRows, Store, Write
from .dialect import POSTGRES
from .snapshots import handover_from_json, handover_to_json

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
        metadata bytea NOT NULL,  -- UTF-8: a Kafka string may hold U+0000, text cannot
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
    # 2: the cluster: nodes with their leases, coordinator partitions with owner and epoch,
    # settings every node must agree on; each group's rows carry its partition.
    """
    CREATE TABLE cluster_nodes (
        node_id integer PRIMARY KEY,
        listeners text NOT NULL,
        lease_expires_at timestamptz NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE coordinator_partitions (
        partition integer PRIMARY KEY,
        owner integer,
        epoch bigint NOT NULL DEFAULT 0,
        changed_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE cluster_settings (
        name text PRIMARY KEY,
        value text NOT NULL
    );
    ALTER TABLE groups ADD COLUMN coordinator_partition integer;
    ALTER TABLE offsets ADD COLUMN coordinator_partition integer;
    ALTER TABLE member_heartbeats ADD COLUMN coordinator_partition integer;
    CREATE INDEX groups_by_partition ON groups (coordinator_partition);
    CREATE INDEX offsets_by_partition ON offsets (coordinator_partition);
    CREATE INDEX heartbeats_by_partition ON member_heartbeats (coordinator_partition);
    """,
    # 3: KIP-848 consumer groups and their members (JSON); their offsets are in `offsets`.
    """
    CREATE TABLE consumer_groups (
        group_id text PRIMARY KEY,
        data text NOT NULL,
        coordinator_partition integer
    );
    CREATE INDEX consumer_groups_by_partition ON consumer_groups (coordinator_partition);
    CREATE TABLE consumer_group_members (
        group_id text NOT NULL,
        member_id text NOT NULL,
        data text NOT NULL,
        coordinator_partition integer,
        PRIMARY KEY (group_id, member_id)
    );
    CREATE INDEX consumer_members_by_partition
        ON consumer_group_members (coordinator_partition);
    """,
    # 4: each node's console address, so every node's console links to the others'.
    """
    ALTER TABLE cluster_nodes ADD COLUMN console_url text;
    """,
    # 5: the key topic ids are derived with, one for the cluster (catalog.py); the topics
    # stored until now keep the ids they had (UUIDv5 of the name).
    """
    CREATE TABLE topic_id_key (
        one integer PRIMARY KEY CHECK (one = 1),
        key bytea NOT NULL
    );
    ALTER TABLE topics ADD COLUMN unkeyed_id boolean NOT NULL DEFAULT false;
    UPDATE topics SET unkeyed_id = true;
    """,
    # 6: placement with hysteresis (cluster/plan.py): since when a node whose lease had run
    # out is live again, and the owner a failure took each partition from.
    """
    ALTER TABLE cluster_nodes ADD COLUMN IF NOT EXISTS live_since timestamptz;
    ALTER TABLE coordinator_partitions ADD COLUMN IF NOT EXISTS previous_owner integer;
    """,
    # 7: groups' own configs (Kafka's dynamic group configs), JSON.
    """
    CREATE TABLE group_configs (
        group_id text PRIMARY KEY,
        data text NOT NULL,
        coordinator_partition integer
    );
    CREATE INDEX group_configs_by_partition ON group_configs (coordinator_partition);
    """,
    # 8: classic groups handed over alive (group/handover.py), written with the release of
    # their partition at the releasing owner's epoch, read and deleted by the next owner.
    """
    CREATE TABLE group_handovers (
        group_id text PRIMARY KEY,
        coordinator_partition integer NOT NULL,
        epoch bigint NOT NULL,
        data text NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX group_handovers_by_partition ON group_handovers (coordinator_partition);
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


class Fenced(Exception):
    """This node no longer owns (at its epoch) a partition it tried to write to."""

    def __init__(self, partitions: set[int]) -> None:
        super().__init__(f"fenced: coordinator partitions {sorted(partitions)} are not ours")
        self.partitions = partitions


class LeaseRanOut(Fenced):
    """The write completed, or would start, after this node's lease may have run out: it
    is not reported done (the store may hold it; the next owner loads it)."""


class StoreUnavailable(Exception):
    """The database failed the last write; the next attempt waits for the backoff."""


#: Backoff after a failed write: first and longest interval, in seconds.
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 2.0


class PostgresStore(Store):
    def __init__(
        self,
        database_url: str,
        partitions: int = 50,
        clustered: bool = False,
        pool_size: int = 4,
        lease_timeout_ms: int = 6000,
    ) -> None:
        """``partitions``: offsets.topic.num.partitions. ``clustered``: groups are loaded per
        partition as the node acquires them (``load_partitions``), and writes are fenced
        by ``epochs`` and bounded by ``lease_left_ms``."""
        self.database_url = database_url
        self.partitions = partitions
        self.clustered = clustered
        self.pool_size = pool_size
        self.lease_timeout_ms = lease_timeout_ms
        #: What is left of this node's lease, in ms (clustered: set by the cluster).
        self.lease_left_ms: Callable[[], int] | None = None
        self._backoff_s = 0.0
        self._retry_at = 0.0
        self.node_id = -1
        #: Partition -> the epoch this node holds it at (clustered: set by the cluster).
        self.epochs: dict[int, int] = {}
        self._partition_of: dict[str, int] = {}
        #: Told which partitions a write was fenced from (the cluster re-checks at once).
        self.on_fenced: Callable[[set[int]], None] | None = None
        self._pool: asyncpg.Pool | None = None
        self._queued: list[tuple[Write, asyncio.Future[None]]] = []
        self._writing = False
        self._writer: asyncio.Task[None] | None = None
        self._idle: asyncio.Future[None] | None = None  # close() waits on it
        self.transactions = 0

    async def open(self) -> LoadedState:
        try:
            self._pool = await asyncpg.create_pool(
                self.database_url,
                min_size=1,
                max_size=self.pool_size,
                server_settings=bounded.keepalive_settings(self.lease_timeout_ms),
                init=self._init_connection,
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StartupError(f"cannot reach the database: {exc}") from None
        async with self._pool.acquire() as conn:
            await migrate(conn)
            await self._agree_on_partitions(conn)
            return await _load(conn, groups=not self.clustered)

    async def _init_connection(self, conn: asyncpg.Connection) -> None:
        bounded.enable_keepalives(conn, self.lease_timeout_ms)

    def budget_ms(self) -> int:
        """How long a transaction may take: what is left of the lease (clustered), else
        the lease timeout."""
        if self.lease_left_ms is None:
            return self.lease_timeout_ms
        return self.lease_left_ms()

    async def _agree_on_partitions(self, conn: asyncpg.Connection) -> None:
        """offsets.topic.num.partitions is fixed once data exists, as in Kafka; rows written
        before the cluster schema get their partition now."""
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            stored = await conn.fetchval(
                "SELECT value FROM cluster_settings WHERE name = 'offsets_topic_num_partitions'"
            )
            if stored is not None and int(stored) != self.partitions:
                raise StartupError(
                    f"the database is laid out for {stored} coordinator partitions, not"
                    f" {self.partitions}: start with --offsets-topic-num-partitions {stored}"
                )
            if stored is None:
                await conn.execute(
                    "INSERT INTO cluster_settings VALUES ('offsets_topic_num_partitions', $1)",
                    str(self.partitions),
                )
                await conn.execute(
                    "INSERT INTO coordinator_partitions (partition)"
                    " SELECT generate_series(0, $1 - 1) ON CONFLICT DO NOTHING",
                    self.partitions,
                )
            for table in (t.name for t in tables.PARTITIONED):
                unplaced = await conn.fetch(
                    f"SELECT DISTINCT group_id FROM {table} WHERE coordinator_partition IS NULL"
                )
                await conn.executemany(
                    f"UPDATE {table} SET coordinator_partition = $2 WHERE group_id = $1",
                    [(r["group_id"], self.partition_of(r["group_id"])) for r in unplaced],
                )

    def partition_of(self, group_id: str) -> int:
        partition = self._partition_of.get(group_id)
        if partition is None:
            partition = self._partition_of[group_id] = partition_for(group_id, self.partitions)
        return partition

    async def load_partitions(self, partitions: list[int]) -> list[Record]:
        """Everything stored for the groups of ``partitions``, for ``GroupCoordinator.load``."""
        async with bounded.transaction(self.pool, self.budget_ms(), "load") as conn:
            return await _load_records(conn, partitions)

    async def take_over(self, acquired: dict[int, int]) -> tuple[list[Record], list[GroupHandover]]:
        """What ``load_partitions`` reads for the partitions taken (partition -> the new
        epoch), and the hand-overs their previous owner wrote when it released them: only
        those of the epoch just before ours (an older one was another owner's, and the
        groups may have changed since). Every hand-over of these partitions is consumed."""
        partitions = sorted(acquired)
        async with bounded.transaction(self.pool, self.budget_ms(), "load") as conn:
            records = await _load_records(conn, partitions)
            rows = await conn.fetch(
                "DELETE FROM group_handovers WHERE coordinator_partition = ANY($1) RETURNING"
                " group_id, coordinator_partition, epoch, data,"
                " (extract(epoch FROM now() - written_at) * 1000)::bigint AS age_ms",
                partitions,
            )
        return records, [
            handover_from_json(r["group_id"], json.loads(r["data"]), r["age_ms"])
            for r in rows
            if r["epoch"] + 1 == acquired.get(r["coordinator_partition"])
        ]

    async def write_handovers(
        self,
        conn: asyncpg.Connection,
        released: dict[int, int],
        groups: list[tuple[GroupMetadataRecord | None, GroupHandover]],
    ) -> None:
        """Inside the transaction that released partitions (partition -> the epoch this
        node held it at, for those it did release): each group of those partitions as
        memory holds it, a classic group's snapshot replacing the stored one, and its
        hand-over."""
        snapshots: list[Record] = []
        rows: list[tuple[str, int, int, str]] = []
        for snapshot, handover in groups:
            partition = self.partition_of(handover.group_id)
            if partition not in released:
                continue
            if snapshot is not None:
                snapshots.append(snapshot)
            data = json.dumps(handover_to_json(handover))
            rows.append((handover.group_id, partition, released[partition], data))
        if not rows:
            return
        if snapshots:
            await _apply(conn, Write(records=snapshots), self.partition_of)
        await conn.executemany(
            "INSERT INTO group_handovers (group_id, coordinator_partition, epoch, data)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (group_id) DO UPDATE SET"
            " coordinator_partition = excluded.coordinator_partition,"
            " epoch = excluded.epoch, data = excluded.data, written_at = now()",
            rows,
        )

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
        touched = {self.partition_of(r.group_id) for b in batches for r in b.records}
        if time.monotonic() < self._retry_at:
            raise StoreUnavailable("the database failed the last write; retrying shortly")
        try:
            if self.clustered and touched - self.epochs.keys():
                raise Fenced(touched - self.epochs.keys())
            try:
                async with bounded.transaction(self.pool, self.budget_ms(), "write") as conn:
                    if self.clustered and touched:
                        await self._check_fence(conn, touched)
                    for batch in batches:
                        await _apply(conn, batch, self.partition_of)
            except bounded.BudgetSpent as spent:
                if not self.clustered:
                    raise
                raise LeaseRanOut(touched) from spent
            if self.clustered and self.budget_ms() <= 0:
                raise LeaseRanOut(touched)  # stored, but the answer would come too late
        except Fenced as fenced:
            if self.on_fenced is not None:
                self.on_fenced(fenced.partitions)
            raise
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, bounded.BudgetSpent):
            self._backoff_s = min(BACKOFF_MAX_S, max(BACKOFF_FIRST_S, 2 * self._backoff_s))
            self._retry_at = time.monotonic() + self._backoff_s
            raise
        self._backoff_s = 0.0
        self.transactions += 1

    async def _check_fence(self, conn: asyncpg.Connection, touched: set[int]) -> None:
        partitions = sorted(touched)
        held = await conn.fetch(
            _FENCE, partitions, [self.epochs[p] for p in partitions], self.node_id
        )
        lost = touched - {row["partition"] for row in held}
        if lost:
            raise Fenced(lost)

    async def close(self) -> None:
        if self._writing:
            self._idle = asyncio.get_running_loop().create_future()
            await self._idle  # the writer drains what is queued, then says so
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


async def _load(conn: asyncpg.Connection, groups: bool) -> LoadedState:
    state = LoadedState()
    if groups:
        state.records = await _load_records(conn, None)
    rows = await conn.fetch(tables.TOPICS_QUERY)
    state.topics = [(r["name"], r["partitions"]) for r in rows]
    state.unkeyed_topics = frozenset(r["name"] for r in rows if r["unkeyed_id"])
    # The first node to get here makes the key; every other node reads the same one.
    await conn.execute(
        "INSERT INTO topic_id_key (one, key) VALUES (1, $1) ON CONFLICT DO NOTHING",
        secrets.token_bytes(32),
    )
    state.topic_id_key = await conn.fetchval("SELECT key FROM topic_id_key")
    state.security = await _read_security(conn)
    return state


async def _load_records(conn: asyncpg.Connection, partitions: list[int] | None) -> list[Record]:
    """Everything stored of the groups in ``partitions`` (None: of all groups)."""
    args = [] if partitions is None else [partitions]
    records: list[Record] = []
    for query, record in tables.reads(POSTGRES, by_partition=partitions is not None):
        records.extend(record(row) for row in await conn.fetch(query, *args))
    return records


async def _read_security(conn: asyncpg.Connection) -> SecurityRows:
    credentials, acls = [await conn.fetch(query) for query in tables.SECURITY_QUERIES]
    return tables.security_rows(credentials, acls)


async def _apply(conn: asyncpg.Connection, batch: Write, partition_of: tables.PartitionOf) -> None:
    for statement, rows in tables.statements(batch, POSTGRES, partition_of):
        await conn.executemany(statement, rows)


#: The partitions (of $1, at the epochs $2) that node $3 still owns with a live lease; the
#: share lock makes a concurrent takeover wait for this transaction, and fail it after.
_FENCE = """
    SELECT p.partition FROM coordinator_partitions p
    JOIN unnest($1::integer[], $2::bigint[]) AS want(partition, epoch)
      ON want.partition = p.partition AND want.epoch = p.epoch
    JOIN cluster_nodes n ON n.node_id = p.owner
    WHERE p.owner = $3 AND n.lease_expires_at > now()
    FOR SHARE OF p
"""
