"""The storage interface the coordinator owns.

The state machine emits records; the runtime hands them to a ``Store`` in ``Write``
batches, which the store turns into rows (``tables.py``: one table of record type -> rows,
the same for every SQL store). A store applies each batch
atomically and reports when it is durable; concurrent batches may be committed together
(group commit). Shaped so that a networked database (several coordinator nodes sharing
state) can implement it: every write is keyed by group id, and loading is per node.
"""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass, field

from ..group.records import Record
from ..shared.accounts import AclBinding, ScramCredential


@dataclass(slots=True)
class Write:
    """One batch of changes, applied atomically."""

    #: The state machine's records, applied in order.
    records: list[Record] = field(default_factory=list)
    topics: list[tuple[str, int]] = field(default_factory=list)
    #: SCRAM credentials to add or replace, by (username, mechanism).
    credentials: list[ScramCredential] = field(default_factory=list)
    #: (username, mechanism); mechanism None removes every credential of the user.
    deleted_credentials: list[tuple[str, str | None]] = field(default_factory=list)
    acls: list[AclBinding] = field(default_factory=list)
    deleted_acls: list[AclBinding] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.records
            or self.topics
            or self.credentials
            or self.deleted_credentials
            or self.acls
            or self.deleted_acls
        )


@dataclass(slots=True)
class LoadedState:
    #: For ``GroupCoordinator.load``, which replays them: every record stored, the latest
    #: of each key (``tables.READS`` says in which order).
    records: list[Record] = field(default_factory=list)
    topics: list[tuple[str, int]] = field(default_factory=list)
    security: SecurityRows = field(default_factory=lambda: SecurityRows())
    #: The key topic ids are derived with (``Catalog.use_id_key``; None: UUIDv5 of the name)
    #: and the topics stored before it existed, which keep their UUIDv5 ids.
    topic_id_key: bytes | None = None
    unkeyed_topics: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class SecurityRows:
    """Users (as SCRAM credentials, never passwords) and ACL bindings."""

    credentials: tuple[ScramCredential, ...] = ()
    acls: tuple[AclBinding, ...] = ()


class Store(abc.ABC):
    """Durable coordinator state. ``write`` returns a future that resolves when durable."""

    # False for a store that keeps nothing: the broker then skips serialising records and
    # checkpointing heartbeats for it (profiling: both were a tenth of a rebalance's CPU).
    persistent: bool = True

    @abc.abstractmethod
    async def open(self) -> LoadedState:
        """Prepare the store (migrations) and return everything it holds."""

    @abc.abstractmethod
    def write(self, batch: Write) -> asyncio.Future[None]:
        """Queue ``batch``; the future resolves once it is durable (or fails). Batches are
        applied in the order they were queued."""

    @abc.abstractmethod
    async def read_security(self) -> SecurityRows:
        """Users and ACLs as stored now: the ``users``/``acls`` commands may change them
        while the daemon runs, and the daemon re-reads them."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Finish pending writes and release resources."""
