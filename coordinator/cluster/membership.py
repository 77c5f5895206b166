"""This node's membership in the cluster: it renews its lease, takes and gives back
coordinator partitions, loads and unloads their groups, and keeps the routing current.

A tick runs every ``--lease-renew-interval-ms``, and at once when another node announces a
change (PostgreSQL LISTEN/NOTIFY) or a write of this node was fenced. It renews the lease
(a transaction that waits for no other node) and asks for the placement lock only when
the plan has something for this node to take or give back (``leases.py``). A partition taken
over is loaded with fresh sessions, so the members of a Stable group go on heartbeating at
the same generation (failover without rebalance, as Kafka's coordinator). A partition to
give back is first unloaded (its requests answered NOT_COORDINATOR), then released; the
release stores its classic groups as memory held them, with what was left of each member's
session and the member ids handed out (group/handover.py), and the next owner carries on
from that rather than from the last stored snapshot with whole sessions. On SIGTERM the
node drains: it gives everything back and ends its lease, so the others take over at once
rather than after the lease timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

import asyncpg
import structlog

from ..shared.outage import Outage
from ..store import bounded
from . import leases
from .events import LeaseRenewed, PartitionsAcquired, PartitionsFenced, PartitionsReleased
from .routing import ClusterRouting, PartitionState

if TYPE_CHECKING:
    from ..shell.runtime import Runtime
    from ..store.postgres import PostgresStore

log = structlog.get_logger("cluster")


class ClusterMembership:
    def __init__(self, runtime: Runtime, store: PostgresStore) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.store = store
        self.node_id = settings.node_id
        self.partitions = settings.offsets_topic_num_partitions
        self.lease_timeout_ms = settings.lease_timeout_ms
        self.settle_ms = (
            2 * settings.lease_timeout_ms
            if settings.node_settle_ms is None
            else settings.node_settle_ms
        )
        self.renew_interval_s = settings.lease_renew_interval_ms / 1000
        self.listeners = {
            listener.protocol.value: listener.advertised_address
            for listener in settings.effective_listeners
        }
        self.routing = ClusterRouting(self.node_id, self.partitions)
        self._renewal = Outage(log, "lease renewal")
        runtime.node.routing = self.routing
        #: Partition -> epoch this node holds it at: the store fences writes with it.
        self.held: dict[int, int] = store.epochs
        store.node_id = self.node_id
        store.on_fenced = self._fenced
        store.lease_left_ms = self.lease_left_ms
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._stopping = False
        self._tick_lock = asyncio.Lock()
        #: Advertised in the node's row: the other nodes' consoles link to this one's.
        self.console_url: str | None = None
        self._started = False  # the first successful tick restarts the uptime

    async def start(self) -> None:
        """Join: the first tick takes this node's share (all partitions, for the first node)
        and loads it before the listener opens."""
        await self._listen()
        await self.tick()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _listen(self) -> None:
        """(Re)open the LISTEN connection: after a database restart it is gone, and without
        it hand-overs wait for the next timed tick."""
        if self._listener is not None and not self._listener.is_closed():
            return
        self._listener = await asyncpg.connect(
            self.store.database_url,
            timeout=self.lease_timeout_ms / 1000,
            server_settings=bounded.keepalive_settings(self.lease_timeout_ms),
        )
        bounded.enable_keepalives(self._listener, self.lease_timeout_ms)
        await self._listener.add_listener(leases.CHANNEL, self._notified)

    def _notified(self, *_args: Any) -> None:
        self._wake.set()

    def _fenced(self, partitions: set[int]) -> None:
        log.warning("write fenced", partitions=sorted(partitions))
        self._wake.set()

    async def _run(self) -> None:
        while not self._stopping:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancellation that arrives as the wake-up does.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.renew_interval_s):
                    await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                await self._listen()
                await self.tick()
            except Exception as exc:  # the database is away: keep trying; the lease runs out
                self._renewal.failed(exc)
                self._hold_sessions()
            else:
                self._renewal.succeeded()

    async def tick(self, draining: bool = False) -> None:
        async with self._tick_lock:
            await self._tick(draining)

    def _hold_sessions(self) -> None:
        """While this node's lease has run out it refuses every request (routing.py), so no
        member can heartbeat: none is expired for it. A session about to end is given a
        whole one again (Kafka's coordinator expires nobody of a group it has unloaded, and
        gives whole sessions when it loads the group again)."""
        if self.held and self.runtime.now_ms() >= self.routing.lease_valid_until_ms:
            self._renew_sessions(ending_within_ms=2 * self.lease_timeout_ms)  # past next tick

    def _renew_sessions(self, ending_within_ms: int | None = None) -> None:
        """A whole session from now for the members of every group this node holds (only
        those whose session ends within ``ending_within_ms``, if given)."""
        kept, of = set(self.held), self.routing.partition_of
        groups, now = self.runtime.groups, self.runtime.now_ms()
        self.runtime.apply(groups.renew_sessions(lambda g: of(g) in kept, now, ending_within_ms))

    def lease_left_ms(self) -> int:
        """What is left of this node's lease by its own clock (conservative: counted from
        before the renewal's transaction began)."""
        return self.routing.lease_valid_until_ms - self.runtime.now_ms()

    async def _tick(self, draining: bool) -> None:
        started_ms = self.runtime.now_ms()
        pool = self.store.pool
        routing = self.routing
        emit = self.runtime.emit
        view = await leases.renew(
            pool,
            self.lease_timeout_ms // 2,
            self.node_id,
            self.listeners,
            self.lease_timeout_ms,
            self.settle_ms,
            console_url=self.console_url,
            starting=not self._started,
        )
        self._started = True
        lapsed = started_ms >= routing.lease_valid_until_ms
        self._observe(view, started_ms)
        emit(LeaseRenewed(self.node_id, len(view.live)))
        lost = view.lost(self.node_id, self.held)
        if lost:
            self._unload(lost)
            emit(PartitionsFenced(self.node_id, lost, len(self.held)))
        if lapsed and self.held:
            # Back after the lease ran out (the database away, a pause): the node refused
            # every request meanwhile, so its members get a whole session from now, as a
            # load gives; none is expired for heartbeats it would not take.
            self._renew_sessions()
        if not draining:
            target = view.target(self.partitions)
            held = self.held
            if not view.to_take(self.node_id, target, held) and not view.to_release(
                self.node_id, target
            ):
                return  # nothing to move: the placement lock is not even asked for
        result = await leases.place(
            pool,
            self.lease_left_ms(),
            self.node_id,
            self.listeners,
            self.lease_timeout_ms,
            self.partitions,
            dict(self.held),
            self.settle_ms,
            draining,
            console_url=self.console_url,
        )
        if result is None:
            return  # another node is placing: next tick
        if result.view is not None:
            self._observe(result.view, started_ms)
        routing.owners = result.owners
        if result.lost:
            self._unload(result.lost)
            emit(PartitionsFenced(self.node_id, result.lost, len(self.held)))
        if result.released:
            hand_over, handed = self._hand_over(result.released)
            self._unload(result.released)  # stop serving them first...
            await leases.release(  # ...then hand over
                pool, self.lease_left_ms(), self.node_id, result.released, hand_over, draining
            )
            for p in result.released:
                routing.owners.pop(p, None)  # nobody's until the next owner takes it
            reason = "stopping" if draining else "another node's share"
            emit(PartitionsReleased(self.node_id, result.released, reason, len(self.held), handed))
        if result.acquired:
            await self._load(result.acquired)

    def _observe(self, view: leases.View, started_ms: int) -> None:
        """The routing as of a transaction that renewed this node's lease and read the
        cluster. Leases are counted from before it began (by this node's clock): this
        node's, and each other node's from what was left of it then."""
        routing = self.routing
        routing.lease_valid_until_ms = started_ms + self.lease_timeout_ms
        routing.live = view.live
        routing.owners = view.owners
        routing.settled = view.settled
        routing.previous = view.previous
        routing.lease_ends_ms = {n: started_ms + left for n, left in view.lease_left_ms.items()}

    def _hand_over(self, partitions: list[int]) -> tuple[leases.HandOver, int]:
        """What this node holds of the groups of ``partitions`` (taken before they are
        unloaded), for the release to store: the next owner carries on from it
        (group/handover.py). Only partitions still held at the epoch they were taken at."""
        gone = set(partitions)
        held = {p: e for p, e in self.held.items() if p in gone}
        of = self.routing.partition_of
        groups = self.runtime.groups.handover(lambda g: of(g) in gone, self.runtime.now_ms())

        async def write(conn: asyncpg.Connection, released: dict[int, int]) -> None:
            mine = {p: e for p, e in released.items() if held.get(p) == e}
            await self.store.write_handovers(conn, mine, groups)

        return write, len(groups)

    def _unload(self, partitions: list[int]) -> None:
        gone = set(partitions)
        for p in gone:
            self.routing.mine.pop(p, None)
            self.held.pop(p, None)
        groups = self.runtime.groups
        of = self.routing.partition_of
        self.runtime.apply(groups.unload(lambda g: of(g) in gone, self.runtime.now_ms()))

    async def _load(self, acquired: dict[int, int]) -> None:
        began = time.perf_counter()
        for p, epoch in acquired.items():
            self.held[p] = epoch
            self.routing.mine[p] = PartitionState.LOADING
        records, handovers = await self.store.take_over(acquired)
        if any(self.routing.mine.get(p) is not PartitionState.LOADING for p in acquired):
            return  # lost again while loading; the next tick sorts it out
        now = self.runtime.now_ms()
        # Whole sessions, as Kafka gives on load, unless the previous owner handed the
        # group over alive; a hand-over older than a lease was not taken at once.
        loaded = self.runtime.groups.load(
            records, now, True, handovers, handover_max_age_ms=self.lease_timeout_ms
        )
        self.runtime.apply(loaded)
        for p in acquired:
            self.routing.mine[p] = PartitionState.OWNED
        took_ms = round((time.perf_counter() - began) * 1000, 1)
        partitions = sorted(acquired)
        groups = len({r.group_id for r in records})
        epochs = [acquired[p] for p in partitions]
        self.runtime.emit(
            PartitionsAcquired(
                self.node_id, partitions, epochs, groups, took_ms, len(self.held), len(handovers)
            )
        )

    async def stop(self) -> None:
        """Drain: give every partition back and end the lease (SIGTERM)."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        try:
            await self.tick(draining=True)
            await leases.leave(self.store.pool, self.lease_left_ms(), self.node_id)
        except Exception as exc:
            log.warning("could not hand over on stop", error=str(exc) or repr(exc))
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
