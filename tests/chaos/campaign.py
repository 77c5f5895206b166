"""A bounded fault campaign against a cluster of daemons sharing one PostgreSQL
(``make chaos``; a short run is in ``make test``: ``test_campaign.py``).

Three nodes reach the database each through a proxy the harness owns (``faultproxy.py``);
groups of two members run throughout, one member of each committing every 0.7 s: the
project's own client (classic eager and KIP-848) and, in the full run, unmodified
kafka-python, confluent-kafka classic (range), cooperative-sticky and KIP-848 consumers.
Nemeses, one at a time with a quiet spell after each: kill -9 then restart, SIGSTOP
for 2.5 leases, SIGTERM then restart, a node's database path frozen for 2.5 leases (its
Kafka listener up) at an arbitrary moment and again inside a write transaction (holding
its fencing lock), a 4th node joining then leaving, PostgreSQL restarted, and
PostgreSQL's postmaster killed with kill -9. The history (every commit, its answer and when; every
group's coordinator every 0.25 s; every partition's epoch) is checked at the end:

- no acknowledged commit lost (what the group fetches at the end >= its last ack);
- no partition epoch going backwards;
- during a stall, no group of another node refused;
- failover time per group (fault to its first acknowledged commit after), and coordinator
  moves per group and fault, and groups that moved without being on the faulted node.

Usage: ``python -m tests.chaos.campaign [--quick] [--out FILE.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import signal
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from coordinator.client.connection import connect
from coordinator.client.member import GroupMember
from coordinator.client.pool import ConnectionPool
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode
from tests.faultproxy import FaultProxy
from tests.integration.clients import ConfluentMember, KafkaPythonMember, Member
from tests.integration.conftest import Daemon
from tests.integration.kip848_member import ConsumerProtocolMember
from tests.integration.test_cluster import spread
from tests.postgres_server import PostgresServer, postgres_server

LEASE_MS = 3000
STALL_S = LEASE_MS / 1000 * 2.5
QUIET_S = 12.0
#: A commit slower than this counts as disrupted (a librdkafka commit blocks, not fails,
#: while its member looks for the coordinator).
SLOW_COMMIT_S = 1.0
#: Groups of each confluent-kafka kind in the full run (kafka-python: one).
REAL_GROUPS = 3


@dataclass(frozen=True)
class Timing:
    """The cluster's timers and the campaign's pauses, which follow from them."""

    lease_ms: int
    renew_ms: int
    #: How long a restarted node is live before it takes its share back.
    settle_ms: int
    #: The warm-up, and the quiet spell after each fault: longer than ``settle_ms``, so a
    #: restarted node has taken its groups back before the next fault.
    quiet_s: float

    @property
    def stall_s(self) -> float:
        """A SIGSTOP or a frozen database connection: 2.5 leases."""
        return self.lease_ms / 1000 * 2.5

    @property
    def dead_s(self) -> float:
        """How long a node killed with kill -9 stays down: past its lease, with time for
        its groups to be served elsewhere."""
        return self.lease_ms / 1000 + self.settle_ms / 1000 / 2


FULL = Timing(lease_ms=LEASE_MS, renew_ms=500, settle_ms=2 * LEASE_MS, quiet_s=QUIET_S)
#: The short run (``make test``): the same faults and checks on half the lease; a
#: restarted node settles after one lease, and the quiet spells outlast that by 2 s.
QUICK = Timing(lease_ms=1500, renew_ms=250, settle_ms=1500, quiet_s=3.5)


@dataclass
class Commit:
    group: str
    offset: int
    sent: float
    answered: float
    ok: bool
    error: str = ""


@dataclass
class Fault:
    name: str
    node: int | None
    began: float
    ended: float = 0.0


@dataclass
class History:
    t0: float = field(default_factory=time.monotonic)
    commits: list[Commit] = field(default_factory=list)
    owners: list[tuple[float, str, int]] = field(default_factory=list)  # (t, group, node)
    epochs: list[tuple[float, int, int]] = field(default_factory=list)  # (t, partition, epoch)
    faults: list[Fault] = field(default_factory=list)
    #: Real clients' rebalance counts per group: at the end of the warm-up, at each fault
    #: and at the end of the run.
    rebalances: list[dict[str, int]] = field(default_factory=list)


def node_args(url: str, node_id: int, timing: Timing = FULL) -> tuple[str, ...]:
    return (
        "--store", "postgres", "--database-url", url, "--node-id", str(node_id),
        "--lease-timeout-ms", str(timing.lease_ms),
        "--lease-renew-interval-ms", str(timing.renew_ms),
        "--offsets-topic-num-partitions", "12", "--topic", "t:4",
        "--group-initial-rebalance-delay-ms", "0", "--log-level", "WARNING",
        "--node-settle-ms", str(timing.settle_ms),
    )  # fmt: skip


class Cluster:
    def __init__(self, root: Path, pg: PostgresServer, url: str, timing: Timing = FULL) -> None:
        self.root, self.pg, self.url, self.timing = root, pg, url, timing
        self.nodes: dict[int, Daemon] = {}
        self.proxies: dict[int, FaultProxy] = {}

    def start(self, node_id: int) -> None:
        if node_id not in self.nodes:
            self.proxies[node_id] = FaultProxy(self.pg.port)
            (self.root / f"n{node_id}").mkdir(exist_ok=True)
            url = self.proxies[node_id].url(self.url)
            self.nodes[node_id] = Daemon(
                self.root / f"n{node_id}", *node_args(url, node_id, self.timing)
            )
        self.nodes[node_id].start()

    def signal(self, node_id: int, sig: int) -> None:
        proc = self.nodes[node_id].proc
        assert proc is not None
        proc.send_signal(sig)

    def bootstrap(self) -> list[str]:
        return [d.bootstrap for d in self.nodes.values()]

    def close(self) -> None:
        for d in self.nodes.values():
            with contextlib.suppress(Exception):
                if d.proc is not None:
                    d.proc.send_signal(signal.SIGCONT)
                d.stop(signal.SIGKILL)
        for p in self.proxies.values():
            p.close()


async def committer(member: GroupMember, h: History, stop: asyncio.Event) -> None:
    offset = 0
    while not stop.is_set():
        offset += 1
        sent = time.monotonic()
        error = ""
        try:
            await asyncio.wait_for(member.commit({("t", 0): offset}), 5)
        except Exception as exc:
            error = repr(exc)[:120]
        h.commits.append(Commit(member.group_id, offset, sent, time.monotonic(), not error, error))
        await asyncio.sleep(0.7)


#: Real client libraries: name -> (member class, extra library settings).
REAL: dict[str, tuple[type[Member], dict[str, Any]]] = {
    "kafka-python": (KafkaPythonMember, {}),
    "confluent-classic": (ConfluentMember, {}),
    "confluent-cooperative": (
        ConfluentMember,
        {"partition.assignment.strategy": "cooperative-sticky"},
    ),
    "confluent-kip848": (ConsumerProtocolMember, {}),
}


async def real_committer(member: Member, h: History, stop: asyncio.Event) -> None:
    offset = 0
    while not stop.is_set():
        offset += 1
        sent = time.monotonic()
        error = ""
        try:
            await asyncio.to_thread(member.call, lambda o=offset: member._commit({("t", 0): o}), 10)
        except Exception as exc:
            error = repr(exc)[:120]
        h.commits.append(Commit(member.group, offset, sent, time.monotonic(), not error, error))
        await asyncio.sleep(0.7)


async def watch_owners(cluster: Cluster, groups: list[str], h: History, stop: asyncio.Event):
    db: asyncpg.Connection | None = None
    while not stop.is_set():
        for node_id, d in list(cluster.nodes.items()):
            if d.proc is None or d.proc.poll() is not None:
                continue
            try:
                c = await asyncio.wait_for(connect("127.0.0.1", d.port), 2)
            except Exception:
                continue
            answered = False
            try:
                # A node whose lease has run out (cut off, just woken) names where it
                # expects the groups to go, and lists itself no more: ask a live one.
                meta = await asyncio.wait_for(
                    c.request(MetadataRequest(topics=[]), 9, MetadataResponse), 2
                )
                if node_id not in {b.node_id for b in meta.brokers}:
                    continue
                for g in groups:
                    now = time.monotonic()
                    r = await asyncio.wait_for(
                        c.request(FindCoordinatorRequest(key=g), 3, FindCoordinatorResponse), 2
                    )
                    if r.error_code == ErrorCode.NONE:
                        h.owners.append((now, g, r.node_id))
                        answered = True
            except Exception:
                continue
            finally:
                c.close()
            if answered:
                break  # one live node's view is enough
        try:
            if db is None or db.is_closed():
                db = await asyncpg.connect(cluster.url, timeout=1)
            now = time.monotonic()
            for row in await db.fetch("SELECT partition, epoch FROM coordinator_partitions"):
                h.epochs.append((now, row["partition"], row["epoch"]))
        except Exception:
            db = None
        await asyncio.sleep(0.25)


def owner_of(h: History, group: str, at: float) -> int | None:
    found = None
    for t, g, n in h.owners:
        if g == group and t <= at:
            found = n
    return found


async def nemeses(
    cluster: Cluster, h: History, quick: bool, rebalances: Callable[[], dict[str, int]]
) -> None:
    def fault(name: str, node: int | None) -> Fault:
        f = Fault(name, node, time.monotonic())
        h.faults.append(f)
        h.rebalances.append(rebalances())
        print(f"[{f.began - h.t0:6.1f}s] {name} {node or ''}", flush=True)
        return f

    plan = ["sigstop", "kill9"] if quick else [
        "kill9", "sigstop", "sigterm", "frozen", "frozen-in-write", "join-leave",
        "pg-restart", "pg-kill9",
    ]  # fmt: skip
    for i, name in enumerate(plan):
        victim = 1 + i % 3
        f = fault(name, None if name.startswith("pg") or name == "join-leave" else victim)
        timing = cluster.timing
        if name == "kill9":
            cluster.signal(victim, signal.SIGKILL)
            await asyncio.sleep(timing.dead_s)
            cluster.nodes[victim].stop(signal.SIGKILL)
            await asyncio.to_thread(cluster.start, victim)
        elif name == "sigstop":
            cluster.signal(victim, signal.SIGSTOP)
            await asyncio.sleep(timing.stall_s)
            cluster.signal(victim, signal.SIGCONT)
        elif name == "sigterm":
            await asyncio.to_thread(cluster.nodes[victim].stop, signal.SIGTERM)
            await asyncio.sleep(2)
            await asyncio.to_thread(cluster.start, victim)
        elif name == "frozen":
            cluster.proxies[victim].freeze()
            await asyncio.sleep(timing.stall_s)
            cluster.proxies[victim].thaw()
        elif name == "frozen-in-write":
            # Frozen once the node's next write holds its fencing lock (its groups commit
            # every 0.7 s); the fault starts then.
            proxy = cluster.proxies[victim]
            proxy.arm(b"-- write", proxy.freeze)
            for _ in range(100):
                if proxy.frozen.is_set():
                    break
                await asyncio.sleep(0.05)
            proxy.arm(b"-- never sent", lambda: None)  # disarmed if no write came
            proxy.freeze()  # (then frozen where it stands)
            f.began = time.monotonic()
            await asyncio.sleep(timing.stall_s)
            proxy.thaw()
        elif name == "join-leave":
            await asyncio.to_thread(cluster.start, 4)
            await asyncio.sleep(timing.quiet_s)
            await asyncio.to_thread(cluster.nodes[4].stop, signal.SIGTERM)
        elif name == "pg-restart":
            await asyncio.to_thread(cluster.pg.restart, 3.0)
        elif name == "pg-kill9":
            cluster.pg.process.send_signal(signal.SIGKILL)
            cluster.pg.process.wait(10)
            for _ in range(20):  # its backends linger a moment, holding shared memory
                try:
                    await asyncio.to_thread(cluster.pg.restart, 0.5)  # crash recovery
                    break
                except RuntimeError:
                    continue
        f.ended = time.monotonic()
        await asyncio.sleep(timing.quiet_s)


def client_of(group: str) -> str:
    name = group.removeprefix("chaos-")
    if not name.isdigit():
        return name.rsplit("-", 1)[0]  # chaos-confluent-classic-2: confluent-classic
    return "own-kip848" if int(name) % 3 == 2 else "own-classic"


def disrupted(c: Commit) -> bool:
    return not c.ok or c.answered - c.sent > SLOW_COMMIT_S


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 2)


def by_client_kind(
    h: History, per_fault: list[dict[str, Any]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per kind of fault and kind of client: failover p50/p99/max over the groups a fault
    disrupted, the longest time a group went without an acknowledged commit, and the
    real clients' rebalances during those faults."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, f in enumerate(per_fault):
        # h.rebalances: [end of warm-up, at fault 0, at fault 1, ..., end of run]
        before = h.rebalances[i + 1] if i + 1 < len(h.rebalances) else {}
        after = h.rebalances[i + 2] if i + 2 < len(h.rebalances) else before
        kinds = out.setdefault(f["fault"], {})

        def entry(group: str, kinds: dict[str, dict[str, Any]] = kinds) -> dict[str, Any]:
            empty: dict[str, Any] = {"failover": [], "gaps": [], "rebalances": 0}
            return kinds.setdefault(client_of(group), empty)

        for g, seconds in f["failover_s_by_group"].items():
            entry(g)["failover"].append(seconds)
        for g, gap in f["longest_without_ack_s_by_group"].items():
            entry(g)["gaps"].append(gap)
        for g, n in after.items():
            entry(g)["rebalances"] += n - before.get(g, n)
    for kinds in out.values():
        for kind, k in kinds.items():
            failover, gaps = k.pop("failover"), k.pop("gaps")
            k["groups_disrupted"] = len(failover)
            if failover:
                k["failover_p50_s"] = percentile(failover, 0.5)
                k["failover_p99_s"] = percentile(failover, 0.99)
                k["failover_max_s"] = round(max(failover), 2)
            k["longest_without_ack_max_s"] = round(max(gaps), 2) if gaps else 0
            if kind.startswith("own-"):
                del k["rebalances"]  # counted for the real clients only
    return out


def check(h: History, fetched: dict[str, int]) -> dict[str, Any]:
    acked: dict[str, int] = {}
    for c in h.commits:
        if c.ok:
            acked[c.group] = max(acked.get(c.group, 0), c.offset)
    lost = {g: (o, fetched[g]) for g, o in acked.items() if g in fetched and fetched[g] < o}
    last: dict[int, int] = {}
    regressions = 0
    for _t, p, e in h.epochs:
        if e < last.get(p, 0):
            regressions += 1
        last[p] = e
    groups = sorted({c.group for c in h.commits})
    per_fault = []
    for i, f in enumerate(h.faults):
        end = h.faults[i + 1].began if i + 1 < len(h.faults) else float("inf")
        # Every commit answered after the fault began and before the next one did (a
        # commit in flight when the fault struck is part of it; one sent just before the
        # next fault and held up by it is the next one's).
        window = [c for c in h.commits if f.began <= c.answered < end]
        by_group: dict[str, float] = {}
        gaps: dict[str, float] = {}
        refused_elsewhere = 0
        failover: list[float] = []
        by_client: dict[str, float] = {}
        after_end: list[float] = []
        owner_changed = 0
        moves: dict[str, int] = {}
        innocent_moved = []
        moved_after: list[float] = []
        for g in groups:
            mine = [c for c in window if c.group == g]
            owner_before = owner_of(h, g, f.began)
            known = owner_before is not None
            if f.node is not None and owner_before == f.node:
                elsewhere = [t for t, gg, n in h.owners if gg == g and t > f.began and n != f.node]
                moved_after.append(round(elsewhere[0] - f.began, 2) if elsewhere else -1)
            failed = [c for c in mine if not c.ok]
            hit = [c for c in mine if disrupted(c)]
            if hit:
                back = [c.answered for c in mine if c.ok and c.sent >= hit[0].sent]
                failover.append(min(back[0] if back else end, h.commits[-1].answered) - f.began)
                by_group[g] = round(failover[-1], 2)
                kind = client_of(g)
                by_client[kind] = round(max(by_client.get(kind, 0.0), failover[-1]), 2)
                if back:
                    after_end.append(max(0.0, back[0] - f.ended))
            if mine:
                last = min(end, h.commits[-1].answered)
                acks = [f.began, *(c.answered for c in mine if c.ok), last]
                gaps[g] = round(max(b - a for a, b in itertools.pairwise(acks)), 2)
            if known and owner_before != owner_of(h, g, min(end, h.owners[-1][0])):
                owner_changed += 1
            seen = [n for t, gg, n in h.owners if gg == g and f.began <= t < end]
            changes = sum(1 for a, b in itertools.pairwise(seen) if a != b)
            moves[g] = changes
            stalled = f.name in ("sigstop", "frozen", "frozen-in-write")
            if stalled and known and owner_before != f.node and not changes:  # another's group
                refused_elsewhere += sum(1 for c in failed if c.sent < f.ended)
            if changes and known and f.node is not None and owner_before != f.node:
                innocent_moved.append(g)
        per_fault.append(
            {
                "fault": f.name,
                "node": f.node,
                "groups_failed_over": len(failover),
                "failover_p50_s": round(statistics.median(failover), 2) if failover else 0,
                "failover_max_s": round(max(failover), 2) if failover else 0,
                "failover_max_s_by_client": by_client,
                "failover_s_by_group": by_group,
                "longest_without_ack_s_by_group": gaps,
                "coordinator_named_elsewhere_after_s": moved_after,
                "served_again_after_fault_ended_max_s": round(max(after_end), 2)
                if after_end
                else 0,
                "groups_whose_coordinator_differs_after": owner_changed,
                "moves_max_per_group": max(moves.values(), default=0),
                "groups_moved": sum(1 for m in moves.values() if m),
                "groups_moved_not_on_faulted_node": len(innocent_moved),
                "refused_on_other_nodes_during_stall": refused_elsewhere,
            }
        )
    return {
        "by_fault_and_client": by_client_kind(h, per_fault),
        "commits": len(h.commits),
        "acknowledged": sum(1 for c in h.commits if c.ok),
        "lost_acknowledged_commits": len(lost),
        "lost": lost,
        "groups_not_fetched_at_the_end": sorted(set(acked) - set(fetched)),
        "epoch_regressions": regressions,
        "faults": per_fault,
    }


async def run(
    quick: bool,
    root: Path,
    history: str | None = None,
    real_groups: int = REAL_GROUPS,
    librdkafka: dict[str, str] | None = None,
    shared_pg: PostgresServer | None = None,
) -> dict[str, Any]:
    """``librdkafka``: settings added to every confluent-kafka member's (e.g.
    ``socket.timeout.ms``, which bounds a commit in flight to a paused node).
    ``shared_pg``: a running server to create the campaign's database in, for the short
    run (its faults leave PostgreSQL alone); the full run restarts and kills its own."""
    if shared_pg is not None and not quick:
        raise ValueError("the full campaign restarts PostgreSQL: it starts its own")
    own = contextlib.nullcontext(shared_pg) if shared_pg is not None else postgres_server()
    with own as pg:
        url = pg.create_database("chaos")
        cluster = Cluster(root, pg, url, QUICK if quick else FULL)
        try:
            # Side by side: each start is mostly the interpreter's imports.
            await asyncio.gather(*(asyncio.to_thread(cluster.start, n) for n in (1, 2, 3)))
            # Members started while the nodes still hand partitions to each other sometimes
            # waited ~10 s (a rebalance timeout) for their first assignment; the warm-up is
            # meant to be the cluster's steady state.
            await spread(cluster.nodes)
            h = History()
            count = 4 if quick else 15
            groups = [f"chaos-{i}" for i in range(count)]
            pool = ConnectionPool()
            members = [
                GroupMember(
                    cluster.bootstrap(),
                    g,
                    protocols=["range"],
                    topics=["t"],
                    group_protocol="consumer" if i % 3 == 2 else "classic",
                    pool=pool,
                    heartbeat_interval_ms=300,
                    session_timeout_ms=10000,
                    rebalance_timeout_ms=10000,
                    request_timeout_ms=2000,
                )
                for i, g in enumerate(groups)
                for _ in "ab"
            ]
            await asyncio.gather(*(m.start(60) for m in members))
            real: dict[str, list[Member]] = {}
            if not quick:
                bootstrap = ",".join(cluster.bootstrap())
                for lib, (kind, config) in REAL.items():
                    confluent = lib.startswith("confluent")
                    if confluent:
                        config = {**config, **(librdkafka or {})}
                    for n in range(real_groups if confluent else 1):
                        real[f"chaos-{lib}-{n}"] = [
                            await asyncio.to_thread(
                                kind,
                                bootstrap,
                                f"chaos-{lib}-{n}",
                                "t",
                                client_id=f"{lib}-{n}-{i}",
                                session_timeout_ms=10000,
                                config=config,
                            )
                            for i in range(2)
                        ]
                groups += list(real)
            stop = asyncio.Event()
            leaders = {m.group_id: m for m in members}  # one committer per group
            tasks = [asyncio.create_task(committer(m, h, stop)) for m in leaders.values()]
            tasks += [asyncio.create_task(real_committer(ms[0], h, stop)) for ms in real.values()]
            tasks.append(asyncio.create_task(watch_owners(cluster, groups, h, stop)))
            await asyncio.sleep(cluster.timing.quiet_s)  # warm-up

            def counts() -> dict[str, int]:
                return {g: sum(m.rebalances for m in ms) for g, ms in real.items()}

            h.rebalances.append(counts())
            await nemeses(cluster, h, quick, counts)
            h.rebalances.append(counts())
            rebalances = {g: n - h.rebalances[0][g] for g, n in h.rebalances[-1].items()}
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            fetched: dict[str, int] = {}
            for g, m in leaders.items():
                for _ in range(20):
                    try:
                        found = await m.fetch_offsets([("t", 0)])
                        fetched[g] = found[("t", 0)].offset
                        break
                    except Exception:
                        await asyncio.sleep(0.5)
            for g, ms in real.items():
                for _ in range(20):
                    try:
                        found = await asyncio.to_thread(ms[0].committed, ("t", 0))
                        fetched[g] = found if found is not None else -1
                        break
                    except Exception:
                        await asyncio.sleep(0.5)
            result = check(h, fetched)
            if history:
                Path(history).write_text(
                    json.dumps(
                        {
                            "t0": h.t0,
                            "faults": [vars(f) for f in h.faults],
                            "commits": [vars(c) for c in h.commits],
                            "owners": h.owners,
                        }
                    )
                )
            closing = [asyncio.create_task(m.close()) for m in members]
            await asyncio.wait(closing, timeout=10)
            for ms in real.values():
                for m in ms:
                    await asyncio.to_thread(m.close)
            await pool.close()
            result["real_client_rebalances_after_warmup"] = rebalances
            result["duration_s"] = round(time.monotonic() - h.t0, 1)
            result["groups"] = count
            result["load"] = os.getloadavg()
            return result
        finally:
            cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--history", help="also write the whole history here (JSON)")
    parser.add_argument(
        "--real-groups",
        type=int,
        default=REAL_GROUPS,
        help="groups of each confluent-kafka kind in the full run (default %(default)s)",
    )
    parser.add_argument(
        "--librdkafka",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for every confluent-kafka member (repeatable)",
    )
    args = parser.parse_args()
    settings = dict(kv.split("=", 1) for kv in args.librdkafka)
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        result = asyncio.run(run(args.quick, Path(tmp), args.history, args.real_groups, settings))
    result["librdkafka_settings"] = settings
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    failed = result["lost_acknowledged_commits"] or result["epoch_regressions"]
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
