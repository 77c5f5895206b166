"""The cluster's state in PostgreSQL: node leases and coordinator partition ownership.

Renewing a lease and moving partitions are separate transactions, so that nothing one node
does can keep another from renewing:

- ``renew`` extends this node's lease and reads the cluster (live nodes, owners, epochs):
  it locks only this node's own row and never waits for the placement lock.
- ``place`` runs only when this node has something to take or give back, under a
  cluster-wide advisory lock so that nodes take turns and each sees the others' last
  decisions. It waits for that lock only briefly (another node's stalled placement is cut
  off by the server within that node's lease; until then this node simply tries again on
  its next tick), and takes only partitions no transaction holds a lock on (``SKIP
  LOCKED``: a stalled node's write keeps its share lock until the server ends it; the
  partition is taken on a later tick).

``place`` computes the plan (``plan.py``), names what this node should no longer own (given
back by ``release``, once it has stopped serving them: a graceful hand-over), and takes what
it should own and nobody live holds, bumping each taken partition's epoch (the fencing
token its writes are checked against) and remembering the owner a failure took it from
(``previous_owner``: where it goes back to). Times are the database's ``now()``: the nodes'
clocks never have to agree. Every transaction is bounded (``store/bounded.py``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg

from ..store import bounded
from .plan import plan
from .routing import NodeAddress

#: pg_advisory_xact_lock key for placement decisions ("gcplace").
PLACEMENT_LOCK = 0x6763_706C_6163_65
#: NOTIFY channel: a node released partitions or joined; the others tick now.
CHANNEL = "group_coordinator_placement"
#: How long a placement waits for another node's, at most (then it tries next tick).
LOCK_WAIT_MS = 500


@dataclass
class View:
    """The cluster as one transaction saw it."""

    live: dict[int, NodeAddress]
    settled: set[int]  # live nodes that may be given others' partitions (plan.py)
    owners: dict[int, int]  # partition -> owner (live or not)
    epochs: dict[int, int]
    previous: dict[int, int]  # partition -> the owner a failure took it from
    #: Live node -> what was left of its lease when the transaction began.
    lease_left_ms: dict[int, int] = field(default_factory=dict)

    def lost(self, node_id: int, held: dict[int, int]) -> list[int]:
        """Of the partitions ``node_id`` believes it holds (at an epoch), those the
        database gives to another owner or epoch: it was fenced."""
        return sorted(
            p for p, e in held.items() if self.owners.get(p) != node_id or self.epochs.get(p) != e
        )

    def target(self, partitions: int) -> dict[int, int]:
        return plan(partitions, self.live, self.owners, self.settled, self.previous)

    def to_take(self, node_id: int, target: dict[int, int], held: dict[int, int]) -> list[int]:
        """Free ones, a dead node's, and this node's own from a previous run (restarted
        within its lease: a new epoch fences whatever that run still had in flight)."""
        return sorted(
            p
            for p, n in target.items()
            if n == node_id
            and (
                self.owners.get(p) not in self.live
                or (self.owners.get(p) == node_id and p not in held)
            )
        )

    def to_release(self, node_id: int, target: dict[int, int]) -> list[int]:
        return sorted(
            p for p, o in self.owners.items() if o == node_id and target.get(p) != node_id
        )


@dataclass
class TickResult:
    live: dict[int, NodeAddress]
    owners: dict[int, int]  # partition -> live owner, after this tick
    acquired: dict[int, int] = field(default_factory=dict)  # partition -> new epoch
    released: list[int] = field(default_factory=list)  # to give back (``release``)
    #: Partitions this node believed it held (at an epoch) that the database gives to
    #: another owner or epoch: it was fenced.
    lost: list[int] = field(default_factory=list)
    view: View | None = None  # what the placement's transaction saw


_RENEW = (
    "INSERT INTO cluster_nodes (node_id, listeners, lease_expires_at, console_url)"
    " VALUES ($1, $2, now() + $3 * interval '1 millisecond', $4)"
    " ON CONFLICT (node_id) DO UPDATE SET listeners = excluded.listeners,"
    " lease_expires_at = excluded.lease_expires_at,"
    " console_url = excluded.console_url,"
    # This run's first renewal restarts the node's uptime (a node killed and started
    # again keeps its row).
    " started_at = CASE WHEN $5 THEN now() ELSE cluster_nodes.started_at END,"
    # A lease renewed after it ran out starts the settle time (plan.py); a row written
    # anew (a first start, or a start after a graceful stop) is settled at once.
    " live_since = CASE WHEN cluster_nodes.lease_expires_at <= now() THEN now()"
    " ELSE cluster_nodes.live_since END"
)


async def _renew(
    conn: asyncpg.Connection,
    node_id: int,
    listeners: dict[str, tuple[str, int]],
    lease_timeout_ms: int,
    console_url: str | None,
    starting: bool = False,
) -> None:
    encoded = json.dumps({k: list(v) for k, v in listeners.items()})
    await conn.execute(_RENEW, node_id, encoded, lease_timeout_ms, console_url, starting)


async def _view(conn: asyncpg.Connection, settle_ms: int) -> View:
    nodes = await conn.fetch(
        "SELECT node_id, listeners, console_url,"
        " (live_since IS NULL OR live_since <= now() - $1 * interval '1 millisecond')"
        " AS settled, extract(epoch FROM lease_expires_at - now()) * 1000 AS lease_left_ms"
        " FROM cluster_nodes WHERE lease_expires_at > now()",
        settle_ms,
    )
    rows = await conn.fetch(
        "SELECT partition, owner, epoch, previous_owner FROM coordinator_partitions"
    )
    return View(
        live={
            r["node_id"]: _address(r["node_id"], r["listeners"], r["console_url"]) for r in nodes
        },
        settled={r["node_id"] for r in nodes if r["settled"]},
        owners={r["partition"]: r["owner"] for r in rows if r["owner"] is not None},
        epochs={r["partition"]: r["epoch"] for r in rows},
        previous={
            r["partition"]: r["previous_owner"] for r in rows if r["previous_owner"] is not None
        },
        lease_left_ms={r["node_id"]: int(r["lease_left_ms"]) for r in nodes},
    )


async def renew(
    pool: asyncpg.Pool,
    budget_ms: int,
    node_id: int,
    listeners: dict[str, tuple[str, int]],
    lease_timeout_ms: int,
    settle_ms: int,
    *,
    console_url: str | None = None,
    starting: bool = False,
) -> View:
    """Extend this node's lease (from the transaction's start: a renewal that took long
    grants that much less) and read the cluster. ``console_url``: where this node's console
    is, for the others' to link to; ``starting``: this run's first renewal."""
    async with bounded.transaction(pool, budget_ms, "renew") as conn:
        await _renew(conn, node_id, listeners, lease_timeout_ms, console_url, starting)
        return await _view(conn, settle_ms)


async def place(
    pool: asyncpg.Pool,
    budget_ms: int,
    node_id: int,
    listeners: dict[str, tuple[str, int]],
    lease_timeout_ms: int,
    partitions: int,
    held: dict[int, int],
    settle_ms: int,
    draining: bool = False,
    *,
    console_url: str | None = None,
) -> TickResult | None:
    """One placement round for ``node_id``, which believes it ``held`` partition -> epoch
    (None: another node is placing; try again later). ``draining``: the node is stopping,
    so it releases everything and takes nothing."""
    async with bounded.transaction(pool, budget_ms, "place") as conn:
        await conn.execute(f"SET LOCAL lock_timeout = {min(LOCK_WAIT_MS, budget_ms)}")
        try:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", PLACEMENT_LOCK)
        except asyncpg.LockNotAvailableError:
            return None
        await conn.execute(f"SET LOCAL lock_timeout = {budget_ms}")
        await _renew(conn, node_id, listeners, lease_timeout_ms, console_url)
        view = await _view(conn, settle_ms)
        if draining:
            view.live.pop(node_id, None)
            view.settled.discard(node_id)
        result = TickResult(view.live, {}, lost=view.lost(node_id, held), view=view)
        target = view.target(partitions)
        # Given back by ``release`` once this node has stopped serving them.
        result.released = view.to_release(node_id, target)
        owners = view.owners
        wanted = [] if draining else view.to_take(node_id, target, held)
        if wanted:
            for row in await conn.fetch(_TAKE, wanted, node_id):
                result.acquired[row["partition"]] = row["epoch"]
        for p in result.acquired:
            owners[p] = node_id
        result.owners = owners
    return result


#: Take partitions $1 for node $2, skipping any a transaction holds a lock on (a stalled
#: node's write); the owner a failure takes a partition from is remembered.
_TAKE = """
    UPDATE coordinator_partitions p SET owner = $2, epoch = p.epoch + 1, changed_at = now(),
        previous_owner = CASE WHEN p.owner IS NOT NULL AND p.owner <> $2 THEN p.owner
                              ELSE p.previous_owner END
    WHERE p.partition IN (
        SELECT partition FROM coordinator_partitions WHERE partition = ANY($1)
        FOR UPDATE SKIP LOCKED)
    RETURNING p.partition, p.epoch
"""


#: Called inside the release's transaction with partition -> epoch of the partitions it
#: released (the store writes the groups' hand-overs there: group/handover.py).
HandOver = Callable[[asyncpg.Connection, dict[int, int]], Awaitable[None]]


async def release(
    pool: asyncpg.Pool,
    budget_ms: int,
    node_id: int,
    partitions: list[int],
    hand_over: HandOver | None = None,
    stopping: bool = False,
) -> None:
    """Give partitions back (the node has stopped serving them); the others take them on
    the notification. ``hand_over``: what the node had in memory for them goes with them,
    in the same transaction (only for the partitions it did still own). ``stopping``: the
    node drains before it stops; it is remembered as their previous owner, so that if it
    comes back it gets back what it had (SIGTERM and restart), not other nodes' groups."""
    previous = "owner" if stopping else "previous_owner"
    async with bounded.transaction(pool, budget_ms, "release") as conn:
        rows = await conn.fetch(
            f"UPDATE coordinator_partitions SET owner = NULL, previous_owner = {previous},"
            " changed_at = now() WHERE partition = ANY($1) AND owner = $2"
            " RETURNING partition, epoch",
            partitions,
            node_id,
        )
        if hand_over is not None and rows:
            await hand_over(conn, {r["partition"]: r["epoch"] for r in rows})
        await conn.execute(f"NOTIFY {CHANNEL}")


async def leave(pool: asyncpg.Pool, budget_ms: int, node_id: int) -> None:
    """The node is gone: its lease ends now (its partitions were released by a draining
    tick, or are free to take as a dead node's)."""
    async with bounded.transaction(pool, budget_ms, "leave") as conn:
        await conn.execute(
            "UPDATE coordinator_partitions SET owner = NULL, previous_owner = owner,"
            " changed_at = now() WHERE owner = $1",
            node_id,
        )
        await conn.execute("DELETE FROM cluster_nodes WHERE node_id = $1", node_id)
        await conn.execute(f"NOTIFY {CHANNEL}")


def _address(node_id: int, listeners: str, console_url: str | None = None) -> NodeAddress:
    decoded = json.loads(listeners)
    return NodeAddress(node_id, {k: (v[0], int(v[1])) for k, v in decoded.items()}, console_url)
