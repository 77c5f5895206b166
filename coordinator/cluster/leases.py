"""The cluster's state in PostgreSQL: node leases and coordinator partition ownership.

One *tick* is one transaction under a cluster-wide advisory lock, so nodes take turns and
each sees the others' last decisions: it renews this node's lease, reads the live nodes and
the owners, computes the plan (``plan.py``), names what this node should no longer own
(given back by ``release``, once it has stopped serving them: a graceful hand-over), and takes
what it should own and nobody live holds, bumping each taken partition's
epoch (the fencing token its writes will be checked against). Times are the database's
``now()``: the nodes' clocks never have to agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import asyncpg

from .plan import plan
from .routing import NodeAddress

#: pg_advisory_xact_lock key for placement decisions ("gcplace").
PLACEMENT_LOCK = 0x6763_706C_6163_65
#: NOTIFY channel: a node released partitions or joined; the others tick now.
CHANNEL = "group_coordinator_placement"


@dataclass
class TickResult:
    live: dict[int, NodeAddress]
    owners: dict[int, int]  # partition -> owner, after this tick
    acquired: dict[int, int] = field(default_factory=dict)  # partition -> new epoch
    released: list[int] = field(default_factory=list)  # to give back (``release``)
    #: Partitions this node believed it held (at an epoch) that the database gives to
    #: another owner or epoch: it was fenced.
    lost: list[int] = field(default_factory=list)


async def tick(
    conn: asyncpg.Connection,
    node_id: int,
    listeners: dict[str, tuple[str, int]],
    lease_timeout_ms: int,
    partitions: int,
    held: dict[int, int],
    draining: bool = False,
    *,
    console_url: str | None = None,
    starting: bool = False,
) -> TickResult:
    """One placement round for ``node_id``, which believes it ``held`` partition -> epoch.
    ``draining``: the node is stopping, so it releases everything and takes nothing.
    ``starting``: this run's first tick, which restarts the node's uptime (a node killed and
    started again keeps its row)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", PLACEMENT_LOCK)
        await conn.execute(
            "INSERT INTO cluster_nodes (node_id, listeners, lease_expires_at, console_url)"
            " VALUES ($1, $2, now() + $3 * interval '1 millisecond', $4)"
            " ON CONFLICT (node_id) DO UPDATE SET listeners = excluded.listeners,"
            " lease_expires_at = excluded.lease_expires_at,"
            " console_url = excluded.console_url,"
            " started_at = CASE WHEN $5 THEN now() ELSE cluster_nodes.started_at END",
            node_id,
            json.dumps({k: list(v) for k, v in listeners.items()}),
            lease_timeout_ms,
            console_url,
            starting,
        )
        live = {
            row["node_id"]: _address(row["node_id"], row["listeners"], row["console_url"])
            for row in await conn.fetch(
                "SELECT node_id, listeners, console_url FROM cluster_nodes"
                " WHERE lease_expires_at > now()"
            )
        }
        if draining:
            live.pop(node_id, None)
        rows = await conn.fetch("SELECT partition, owner, epoch FROM coordinator_partitions")
        owners = {r["partition"]: r["owner"] for r in rows if r["owner"] is not None}
        epochs = {r["partition"]: r["epoch"] for r in rows}
        result = TickResult(live, {})
        result.lost = [p for p, e in held.items() if owners.get(p) != node_id or epochs[p] != e]
        target = plan(partitions, live, {p: o for p, o in owners.items() if o in live})
        # Given back by ``release`` once this node has stopped serving them.
        result.released = sorted(
            p for p, o in owners.items() if o == node_id and target.get(p) != node_id
        )
        # Free ones, a dead node's, and this node's own from a previous run (restarted
        # within its lease: a new epoch fences whatever that run still had in flight).
        wanted = [
            p
            for p, n in target.items()
            if n == node_id
            and (owners.get(p) not in live or (owners.get(p) == node_id and p not in held))
        ]
        if wanted:
            for row in await conn.fetch(
                "UPDATE coordinator_partitions SET owner = $2, epoch = epoch + 1,"
                " changed_at = now() WHERE partition = ANY($1) RETURNING partition, epoch",
                wanted,
                node_id,
            ):
                result.acquired[row["partition"]] = row["epoch"]
        for p in result.acquired:
            owners[p] = node_id
        result.owners = owners
    return result


async def release(conn: asyncpg.Connection, node_id: int, partitions: list[int]) -> None:
    """Give partitions back (the node has stopped serving them); the others take them on
    the notification."""
    async with conn.transaction():
        await conn.execute(
            "UPDATE coordinator_partitions SET owner = NULL, changed_at = now()"
            " WHERE partition = ANY($1) AND owner = $2",
            partitions,
            node_id,
        )
        await conn.execute(f"NOTIFY {CHANNEL}")


async def leave(conn: asyncpg.Connection, node_id: int) -> None:
    """The node is gone: its lease ends now (its partitions were released by a draining
    tick, or are free to take as a dead node's)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", PLACEMENT_LOCK)
        await conn.execute(
            "UPDATE coordinator_partitions SET owner = NULL, changed_at = now() WHERE owner = $1",
            node_id,
        )
        await conn.execute("DELETE FROM cluster_nodes WHERE node_id = $1", node_id)
        await conn.execute(f"NOTIFY {CHANNEL}")


def _address(node_id: int, listeners: str, console_url: str | None = None) -> NodeAddress:
    decoded = json.loads(listeners)
    return NodeAddress(node_id, {k: (v[0], int(v[1])) for k, v in decoded.items()}, console_url)
