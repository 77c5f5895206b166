"""The whole cluster in every node's console (``--store postgres``).

Each node's state machine holds only the groups of its own coordinator partitions; the
others' are read from the shared store (``cluster/directory.py``), at most once every
``MAX_AGE_S`` and only while someone looks, and each is shown with its coordinator: the
node that owns its partition now, linked to that node's console (the URL each node
advertises in its lease row). A failed read keeps the last list and says so.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import structlog

from ..cluster.directory import StoredGroup, read_groups
from ..cluster.routing import ClusterRouting
from ..handlers.node import Node
from ..security.config import advertisable
from ..store.postgres import PostgresStore

log = structlog.get_logger("console")

#: The store is read again when a page asks and the last read is older than this.
MAX_AGE_S = 2.0
#: A read that takes longer is given up (the last list stays)...
READ_TIMEOUT_S = 2.0
#: ...and, while the database is away, tried again this much later, so pages are not held
#: up by every attempt.
RETRY_AFTER_S = 10.0


def console_url(host: str, port: int) -> str:
    """How another node's console links to this one: a wildcard address is advertised as
    this machine's host name, as the Kafka listeners are."""
    name, _ = advertisable(host, port)
    if ":" in name:
        name = f"[{name}]"  # an IPv6 address
    return f"http://{name}:{port}/"


@dataclass
class ClusterGroups:
    """The cluster's groups as the store last had them."""

    store: PostgresStore
    default_assignor: str
    groups: list[StoredGroup] | None = None  # None: never read yet
    next_read_at: float | None = None  # loop time; None: read at once
    problem: str | None = None  # why the last read failed

    def __post_init__(self) -> None:
        self._lock = asyncio.Lock()

    def by_id(self) -> dict[str, StoredGroup]:
        return {g.group_id: g for g in self.groups or ()}

    async def refresh(self) -> None:
        loop = asyncio.get_running_loop()
        if self.next_read_at is not None and loop.time() < self.next_read_at:
            return
        async with self._lock:
            if self.next_read_at is not None and loop.time() < self.next_read_at:
                return  # another page read it meanwhile
            try:
                async with asyncio.timeout(READ_TIMEOUT_S):
                    async with self.store.pool.acquire() as conn:
                        self.groups = await read_groups(conn, self.default_assignor)
                self.problem = None
                self.next_read_at = loop.time() + MAX_AGE_S
            except Exception as exc:  # the database is away: show what was last read
                if self.problem is None:
                    log.warning("console cannot read the cluster's groups", error=repr(exc))
                self.problem = str(exc) or type(exc).__name__
                self.next_read_at = loop.time() + RETRY_AFTER_S


def coordinator(node: Node, group_id: str) -> dict[str, Any] | None:
    """The node that coordinates ``group_id`` now, with its console's URL (None on a single
    node, or while no live node owns its partition)."""
    routing = node.routing
    if not isinstance(routing, ClusterRouting):
        return None
    owner = routing.coordinator(group_id, node.now_ms())
    if owner is None:
        return None
    address = routing.live.get(owner)
    url = address.console_url if address is not None else None
    return {"node_id": owner, "this": owner == routing.node_id, "console_url": url}


def group_url(console: str | None, group_id: str) -> str | None:
    """The group's page on the console at ``console``."""
    if console is None:
        return None
    return f"{console.rstrip('/')}/group?{urlencode({'id': group_id})}"
