"""What SQLite and PostgreSQL write differently, and nothing else: placeholders, the
coordinator partition column a PostgreSQL row carries, how a Kafka string that may hold
U+0000 is kept. Every statement the stores run on records is made here from a ``Table``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    #: The primary key's columns; the first is the group id in a partitioned table.
    key: tuple[str, ...]
    #: The other columns a write sets.
    values: tuple[str, ...] = ()
    #: Its rows belong to a group, so to a coordinator partition (PostgreSQL: a column).
    partitioned: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        return self.key + self.values


@dataclass(frozen=True, slots=True)
class Dialect:
    #: "?" (SQLite) or "$" (PostgreSQL: $1, $2, ...).
    placeholder: str
    #: Partitioned tables carry ``coordinator_partition`` (PostgreSQL).
    partition_column: bool
    #: Kafka strings kept as UTF-8 bytes (PostgreSQL ``bytea``: ``text`` cannot hold U+0000).
    strings_as_bytes: bool

    def marks(self, n: int, first: int = 1) -> list[str]:
        if self.placeholder == "?":
            return ["?"] * n
        return [f"${i}" for i in range(first, first + n)]

    def columns(self, table: Table) -> tuple[str, ...]:
        if self.partition_column and table.partitioned:
            return (*table.columns, "coordinator_partition")
        return table.columns

    def upsert(self, table: Table) -> str:
        """Insert a row, or replace the values of the row with its key (none: keep it)."""
        columns = self.columns(table)
        updated = columns[len(table.key) :]
        action = (
            "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in updated)
            if updated
            else "DO NOTHING"
        )
        return (
            f"INSERT INTO {table.name} ({', '.join(columns)})"
            f" VALUES ({', '.join(self.marks(len(columns)))})"
            f" ON CONFLICT ({', '.join(table.key)}) {action}"
        )

    def delete(self, table: Table, by: tuple[str, ...]) -> str:
        marks = self.marks(len(by))
        where = " AND ".join(f"{c} = {m}" for c, m in zip(by, marks, strict=True))
        return f"DELETE FROM {table.name} WHERE {where}"

    def select(self, table: Table, by_partition: bool = False) -> str:
        """Every row (``by_partition``: of the partitions given as the one argument)."""
        query = f"SELECT {', '.join(table.columns)} FROM {table.name}"
        if by_partition:
            query += " WHERE coordinator_partition = ANY($1)"
        return query

    def encode_string(self, value: str) -> str | bytes:
        return value.encode("utf-8", "surrogatepass") if self.strings_as_bytes else value


SQLITE = Dialect(placeholder="?", partition_column=False, strings_as_bytes=False)
POSTGRES = Dialect(placeholder="$", partition_column=True, strings_as_bytes=True)
