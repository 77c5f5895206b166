"""How every record is stored: the table it writes, the row it upserts or the rows it
deletes, and the record a stored row is read back as. One declaration for both stores;
SQLite and PostgreSQL differ only in ``dialect.py``, and keep only their connections,
transactions (and PostgreSQL its fencing).

A new field of a record kept as a JSON document (snapshots, consumer groups and members,
configs) needs nothing here: ``snapshots.py`` writes every field the record declares. A
record kept in columns (offsets, heartbeats) needs a migration in each store and its
column below.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby
from typing import Any

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
from ..shared.accounts import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    ScramCredential,
)
from .base import SecurityRows, Write
from .dialect import Dialect, Table
from .snapshots import Document

Row = tuple[Any, ...]
#: One statement and the rows it runs for (``executemany``).
Statement = tuple[str, list[Row]]
PartitionOf = Callable[[str], int]

OFFSETS = Table(
    "offsets",
    ("group_id", "topic", "partition"),
    (
        "committed_offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp_ms",
        "expire_timestamp_ms",
    ),
)
#: The column of ``OFFSETS`` that holds a Kafka string (may hold U+0000).
_METADATA = OFFSETS.columns.index("metadata")
GROUPS = Table("groups", ("group_id",), ("data",))
HEARTBEATS = Table("member_heartbeats", ("group_id", "member_id"), ("last_heartbeat_ms",))
CONSUMER_GROUPS = Table("consumer_groups", ("group_id",), ("data",))
CONSUMER_MEMBERS = Table("consumer_group_members", ("group_id", "member_id"), ("data",))
GROUP_CONFIGS = Table("group_configs", ("group_id",), ("data",))
TOPICS = Table("topics", ("name",), ("partitions",), partitioned=False)
CREDENTIALS = Table(
    "scram_credentials",
    ("username", "mechanism"),
    ("salt", "iterations", "stored_key", "server_key"),
    partitioned=False,
)
ACLS = Table(
    "acls",
    (
        "principal",
        "resource_type",
        "resource_name",
        "pattern_type",
        "operation",
        "permission",
        "host",
    ),
    partitioned=False,
)
#: Every table whose rows belong to a group.
PARTITIONED = (OFFSETS, GROUPS, HEARTBEATS, CONSUMER_GROUPS, CONSUMER_MEMBERS, GROUP_CONFIGS)

_BY_GROUP = ("group_id",)

#: Records kept as JSON documents (every field but the key columns).
SNAPSHOT = Document(GroupMetadataRecord, ("group_id",), "group")
CONSUMER_GROUP = Document(ConsumerGroupRecord, ("group_id",), "consumer group")
CONSUMER_MEMBER = Document(ConsumerMemberRecord, ("group_id", "member_id"), "consumer group")


@dataclass(frozen=True, slots=True)
class Upsert:
    table: Table


@dataclass(frozen=True, slots=True)
class Delete:
    table: Table
    by: tuple[str, ...]


#: One write a record makes, and the record's row for it (None: this record makes none).
Op = tuple[Upsert | Delete, Callable[[Any], Row | None]]


def _group(r: Any) -> Row:
    return (r.group_id,)


def _config_row(r: GroupConfigRecord) -> Row | None:
    return (r.group_id, json.dumps(r.configs)) if r.configs else None


def _config_gone(r: GroupConfigRecord) -> Row | None:
    return None if r.configs else (r.group_id,)


#: Record type -> the writes each of its records makes, in order.
WRITES: dict[type[Record], tuple[Op, ...]] = {
    OffsetCommitRecord: (
        (
            Upsert(OFFSETS),
            lambda r: (
                r.group_id,
                r.topic,
                r.partition,
                r.offset,
                r.leader_epoch,
                r.metadata,
                r.commit_timestamp_ms,
                r.expire_timestamp_ms,
            ),
        ),
    ),
    OffsetDeleteRecord: (
        (Delete(OFFSETS, OFFSETS.key), lambda r: (r.group_id, r.topic, r.partition)),
    ),
    GroupMetadataRecord: (
        (Upsert(GROUPS), lambda r: (r.group_id, SNAPSHOT.dumps(r))),
        # A snapshot carries its members' heartbeats; older checkpoints are moot.
        (Delete(HEARTBEATS, _BY_GROUP), _group),
    ),
    HeartbeatRecord: (
        (Upsert(HEARTBEATS), lambda r: (r.group_id, r.member_id, r.last_heartbeat_ms)),
    ),
    GroupDeletedRecord: tuple(
        (Delete(table, _BY_GROUP), _group)
        for table in (OFFSETS, GROUPS, HEARTBEATS, CONSUMER_GROUPS, CONSUMER_MEMBERS)
    ),
    ConsumerGroupRecord: (
        (Upsert(CONSUMER_GROUPS), lambda r: (r.group_id, CONSUMER_GROUP.dumps(r))),
    ),
    ConsumerMemberRecord: (
        (
            Upsert(CONSUMER_MEMBERS),
            lambda r: (r.group_id, r.member_id, CONSUMER_MEMBER.dumps(r)),
        ),
    ),
    ConsumerMemberRemovedRecord: (
        (Delete(CONSUMER_MEMBERS, CONSUMER_MEMBERS.key), lambda r: (r.group_id, r.member_id)),
    ),
    ConsumerGroupDeletedRecord: (
        (Delete(CONSUMER_GROUPS, _BY_GROUP), _group),
        (Delete(CONSUMER_MEMBERS, _BY_GROUP), _group),
    ),
    # Empty configs: none left.
    GroupConfigRecord: (
        (Upsert(GROUP_CONFIGS), _config_row),
        (Delete(GROUP_CONFIGS, _BY_GROUP), _config_gone),
    ),
}

#: What loading reads, in this order (a group's configs, consumer groups and their members,
#: classic snapshots, the heartbeats checkpointed since, offsets): table -> its records.
READS: tuple[tuple[Table, Callable[[Row], Record]], ...] = (
    (GROUP_CONFIGS, lambda row: GroupConfigRecord(row[0], json.loads(row[1]))),
    (CONSUMER_GROUPS, lambda row: CONSUMER_GROUP.loads(row[1], row[0])),
    (
        CONSUMER_MEMBERS,
        lambda row: CONSUMER_MEMBER.loads(row[2], row[0], row[1]),
    ),
    (GROUPS, lambda row: SNAPSHOT.loads(row[1], row[0])),
    (HEARTBEATS, lambda row: HeartbeatRecord(*row)),
    (OFFSETS, lambda row: OffsetCommitRecord(*row)),
)


@functools.cache
def _statement(op: Upsert | Delete, dialect: Dialect) -> str:
    if isinstance(op, Upsert):
        return dialect.upsert(op.table)
    return dialect.delete(op.table, op.by)


def _stored_row(op: Upsert | Delete, row: Row, dialect: Dialect, partition_of: PartitionOf) -> Row:
    """The row as the dialect keeps it: Kafka strings, the partition column."""
    if not isinstance(op, Upsert):
        return row
    table = op.table
    if table is OFFSETS and dialect.strings_as_bytes:
        row = (*row[:_METADATA], dialect.encode_string(row[_METADATA]), *row[_METADATA + 1 :])
    if dialect.partition_column and table.partitioned:
        row = (*row, partition_of(row[0]))
    return row


def _record_statements(
    records: list[Record], dialect: Dialect, partition_of: PartitionOf
) -> Iterable[Statement]:
    """Records of one type: one statement per write the type makes, for all of them, when
    its writes touch different tables (a commit storm is one upsert); otherwise in order,
    a run of one write per statement."""
    ops = WRITES[type(records[0])]
    if len({op.table for op, _ in ops}) == len(ops):
        for op, row_of in ops:
            rows = [row for r in records if (row := row_of(r)) is not None]
            if isinstance(op, Upsert) and len(rows) > 1:
                rows = _last_of_each_key(rows, len(op.table.key))
            if rows:
                yield (
                    _statement(op, dialect),
                    [_stored_row(op, row, dialect, partition_of) for row in rows],
                )
        return
    made = ((op, row) for r in records for op, row_of in ops if (row := row_of(r)) is not None)
    for op, run in groupby(made, lambda pair: pair[0]):
        yield (
            _statement(op, dialect),
            [_stored_row(op, row, dialect, partition_of) for _op, row in run],
        )


def _last_of_each_key(rows: list[Row], key_columns: int) -> list[Row]:
    """The rows an upsert of ``rows`` leaves, one per key: the last of each (in one
    transaction the earlier ones are overwritten at once). A member's pipelined
    auto-commits, written together, are a row per partition, not per commit."""
    if key_columns == 1:
        last = {row[0]: row for row in rows}
    else:
        last = {row[:key_columns]: row for row in rows}
    return rows if len(last) == len(rows) else list(last.values())


def _acl_row(a: AclBinding) -> Row:
    return (
        a.principal,
        int(a.resource_type),
        a.resource_name,
        int(a.pattern_type),
        int(a.operation),
        int(a.permission),
        a.host,
    )


def _security_statements(batch: Write, dialect: Dialect) -> Iterable[Statement]:
    for user, mechanism in batch.deleted_credentials:
        if mechanism is None:
            yield dialect.delete(CREDENTIALS, ("username",)), [(user,)]
        else:
            yield dialect.delete(CREDENTIALS, CREDENTIALS.key), [(user, mechanism)]
    if batch.credentials:
        rows = [
            (c.username, c.mechanism, c.salt, c.iterations, c.stored_key, c.server_key)
            for c in batch.credentials
        ]
        yield dialect.upsert(CREDENTIALS), rows
    if batch.deleted_acls:
        yield dialect.delete(ACLS, ACLS.key), [_acl_row(a) for a in batch.deleted_acls]
    if batch.acls:
        yield dialect.upsert(ACLS), [_acl_row(a) for a in batch.acls]


def _no_partitions(group_id: str) -> int:
    raise AssertionError("a store without coordinator partitions")


def statements(
    batch: Write, dialect: Dialect, partition_of: PartitionOf = _no_partitions
) -> list[Statement]:
    """What storing ``batch`` runs, in order: users and ACLs, topics, then the records (a
    run of records of one type as few statements as keeps their order)."""
    out = list(_security_statements(batch, dialect))
    if batch.topics:
        out.append((dialect.upsert(TOPICS), list(batch.topics)))
    for _kind, run in groupby(batch.records, type):
        out.extend(_record_statements(list(run), dialect, partition_of))
    return out


def reads(dialect: Dialect, by_partition: bool) -> list[tuple[str, Callable[[Row], Record]]]:
    """What loading runs (``by_partition``: one argument, the partitions to load), and the
    record each row is."""
    out = []
    for table, record in READS:
        if table is OFFSETS and dialect.strings_as_bytes:
            record = _offset_from_bytes
        out.append((dialect.select(table, by_partition), record))
    return out


def _offset_from_bytes(row: Row) -> Record:
    values = list(row)
    values[_METADATA] = bytes(values[_METADATA]).decode("utf-8", "surrogatepass")
    return OffsetCommitRecord(*values)


TOPICS_QUERY = "SELECT name, partitions, unkeyed_id FROM topics"


SECURITY_QUERIES = (
    "SELECT username, mechanism, salt, iterations, stored_key, server_key"
    " FROM scram_credentials ORDER BY username, mechanism",
    "SELECT principal, resource_type, resource_name, pattern_type, operation,"
    " permission, host FROM acls ORDER BY resource_type, resource_name, principal",
)


def security_rows(credentials: Iterable[Row], acls: Iterable[Row]) -> SecurityRows:
    """Users and ACLs from the rows of ``SECURITY_QUERIES``."""
    return SecurityRows(
        tuple(ScramCredential(*row) for row in credentials),
        tuple(
            AclBinding(
                principal=principal,
                resource_type=ResourceType(rtype),
                resource_name=name,
                pattern_type=PatternType(ptype),
                operation=Operation(op),
                permission=Permission(perm),
                host=host,
            )
            for principal, rtype, name, ptype, op, perm, host in acls
        ),
    )
