"""A cluster on one machine, with its own PostgreSQL: failover time, and heartbeat
throughput of one node against two.

    python -m bench.cluster [--quick] [--kills 20] [--seconds 4] [--runs 3]

Failover: two nodes; each round a static member joins a group the victim coordinates, the
victim is killed with SIGKILL, and the time until the member's heartbeat (same member id,
same generation) succeeds at the other node is measured; the victim is restarted. p50/p99
over ``--kills`` rounds, against the goal lease timeout + 1 s.

Heartbeats: the same closed-loop load (one connection per generator process, depth 64, on
groups the node coordinates) against one node, then spread over two nodes. On a 2-core
machine the generators compete with the nodes for the cores: the report gives the
generators' CPU too.

Writes ``bench/results/cluster.json`` and ``bench/results/cluster.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.client.connection import KafkaConnectionClient, connect
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.errors import ErrorCode
from tests.postgres_server import postgres_server
from tests.wire import heartbeat, join_static_leader

from . import groups, load
from .servers import ServerProcess, start_daemon

RESULTS = Path(__file__).parent / "results"
LEASE_MS = 3000
RENEW_MS = 300


@dataclass(frozen=True)
class Timing:
    lease_ms: int
    #: How long a restarted node is live before it takes its share back (None: the
    #: daemon's default, two leases).
    settle_ms: int | None
    #: From handing the heartbeat load to the generator processes to its start.
    lead_s: float


FULL = Timing(lease_ms=LEASE_MS, settle_ms=None, lead_s=3.0)
#: ``--quick``: the same steps on shorter timers (a restarted node settles after one lease).
QUICK = Timing(lease_ms=1500, settle_ms=1500, lead_s=1.0)


def node_args(url: str, node_id: int, timing: Timing = FULL) -> tuple[str, ...]:
    settle = ("--node-settle-ms", str(timing.settle_ms)) if timing.settle_ms is not None else ()
    return (
        "--store", "postgres", "--database-url", url, "--node-id", str(node_id),
        "--lease-timeout-ms", str(timing.lease_ms), "--lease-renew-interval-ms", str(RENEW_MS),
        "--topic", "bench:100", "--group-initial-rebalance-delay-ms", "0",
        "--max-connections-per-ip", "20000", "--log-level", "WARNING", *settle,
    )  # fmt: skip


async def coordinator_of(c: KafkaConnectionClient, group: str) -> int:
    r = await c.request(FindCoordinatorRequest(key=group), 3, FindCoordinatorResponse)
    return r.node_id if r.error_code == ErrorCode.NONE else -1


async def groups_on(port: int, node_id: int, count: int, prefix: str) -> list[str]:
    """``count`` group names the node coordinates (once the cluster has settled)."""
    c = await connect("127.0.0.1", port)
    found: list[str] = []
    try:
        deadline = time.monotonic() + 30
        i = 0
        while len(found) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {node_id} coordinates no groups")
            name = f"{prefix}-{i}"
            i += 1
            if await coordinator_of(c, name) == node_id:
                found.append(name)
    finally:
        c.close()
    return found


async def settled(ports: dict[int, int]) -> None:
    """Until every node names the same, spread coordinators for a sample of groups."""
    conns = {n: await connect("127.0.0.1", p) for n, p in ports.items()}
    sample = [f"settle-{i}" for i in range(20)]
    try:
        for _ in range(400):
            answers = [[await coordinator_of(c, g) for g in sample] for c in conns.values()]
            if all(a == answers[0] for a in answers) and set(answers[0]) == set(ports):
                await asyncio.sleep(0.5)  # owners finish loading what they just took
                return
            await asyncio.sleep(0.05)
        raise RuntimeError("the cluster did not settle")
    finally:
        for c in conns.values():
            c.close()


def start_nodes(url: str, count: int, timing: Timing) -> dict[int, ServerProcess]:
    """Nodes 1..count, started side by side (each start is mostly its interpreter's
    imports)."""
    with ThreadPoolExecutor(count) as starting:
        started = {
            n: starting.submit(start_daemon, name=f"node-{n}", args=node_args(url, n, timing))
            for n in range(1, count + 1)
        }
    failed = [f for f in started.values() if f.exception() is not None]
    if failed:
        for f in started.values():
            if f.exception() is None:
                f.result().stop()
        raise failed[0].exception()  # type: ignore[misc]
    return {n: f.result() for n, f in started.items()}


def failover(url: str, kills: int, timing: Timing = FULL) -> list[float]:
    nodes = start_nodes(url, 2, timing)
    took: list[float] = []
    try:
        for round_ in range(kills):
            victim, survivor = (1, 2) if round_ % 2 == 0 else (2, 1)
            took.append(asyncio.run(_kill_once(nodes, victim, survivor, round_, timing)))
            if round_ + 1 < kills:  # no restart after the last round
                args = node_args(url, victim, timing)
                nodes[victim] = start_daemon(name=f"node-{victim}", args=args)
    finally:
        for d in nodes.values():
            d.stop()
    return took


async def _kill_once(
    nodes: dict[int, ServerProcess], victim: int, survivor: int, n: int, timing: Timing
) -> float:
    await settled({i: d.port for i, d in nodes.items()})
    (group,) = await groups_on(nodes[survivor].port, victim, 1, f"failover-{n}")
    c = await connect("127.0.0.1", nodes[victim].port)
    for attempt in range(100):  # the victim may still be loading the partition
        try:
            member, generation = await join_static_leader(c, group, "instance", b"assigned")
            break
        except AssertionError:
            if attempt == 99:
                raise
            await asyncio.sleep(0.05)
    c.close()
    other = await connect("127.0.0.1", nodes[survivor].port)
    nodes[victim].proc.kill()
    killed = time.monotonic()
    nodes[victim].proc.wait(10)
    try:
        while time.monotonic() - killed < timing.lease_ms / 1000 + 20:
            moved = await coordinator_of(other, group) == survivor
            if moved and await heartbeat(other, group, member, generation, "instance") == 0:
                return time.monotonic() - killed
            await asyncio.sleep(0.01)
        raise RuntimeError("no failover")
    finally:
        other.close()


async def _form(port: int, names: list[str]) -> tuple[int, list[groups.Member]]:
    first = await groups.open_wire(port)
    wires = [first] + [await groups.open_wire(port, first.versions) for _ in names[1:]]
    try:
        members = await asyncio.gather(
            *(
                groups.join_and_sync(w, name, session_timeout_ms=300_000)
                for w, name in zip(wires, names, strict=True)
            )
        )
    finally:
        for w in wires:
            w.close()
    return first.versions.pick(HeartbeatRequest), list(members)


def heartbeats(
    url: str, nodes_count: int, seconds: float, pool: ProcessPoolExecutor, timing: Timing = FULL
) -> dict[str, Any]:
    """Two generator processes, one connection each at depth 64, on groups coordinated by
    the node(s): both on node 1, or one per node."""
    nodes = start_nodes(url, nodes_count, timing)
    try:
        asyncio.run(settled({i: d.port for i, d in nodes.items()}))
        targets = [nodes[1 + w % nodes_count] for w in range(2)]
        formed = []
        for w, server in enumerate(targets):
            node_id = 1 + w % nodes_count
            names = asyncio.run(
                groups_on(server.port, node_id, 64, f"hb-{nodes_count}-{w}-{time.time_ns()}")
            )
            formed.append((server, *asyncio.run(_form(server.port, names))))
        start_at = time.monotonic() + timing.lead_s  # counted once the groups are formed
        jobs = [
            load.Job(
                port=server.port,
                version=version,
                members=[members],
                depth=64,
                interval_s=0.0,
                start_at=start_at,
                seconds=seconds,
                warmup_s=0.5,
            )
            for server, version, members in formed
        ]
        futures = [pool.submit(load.run_job, job) for job in jobs]
        time.sleep(max(0.0, start_at - time.monotonic()))
        cpu0 = sum(d.cpu_seconds() for d in nodes.values())
        time.sleep(max(0.0, start_at + seconds - time.monotonic()))
        cpu1 = sum(d.cpu_seconds() for d in nodes.values())
        merged = load.merge([f.result(timeout=seconds + 60) for f in futures], seconds)
        merged["server_cpu_cores"] = (cpu1 - cpu0) / seconds
        merged.pop("errors_by_code", None)
        return merged
    finally:
        for d in nodes.values():
            d.stop()


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run, to prove it works")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results")
    args = parser.parse_args(argv)
    timing = FULL
    if args.quick:
        args.kills, args.seconds, args.runs, timing = 2, 1.0, 1, QUICK
    with postgres_server(fsync=True) as pg, ProcessPoolExecutor(2) as pool:
        load.warm_up(pool)  # the generators are started before the first timed load
        took = failover(pg.create_database("failover"), args.kills, timing)
        rates: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for run in range(args.runs):
            for count in (1, 2):  # alternate, so drift in machine load hits both
                url = pg.create_database(f"heartbeats_{count}_{run}")
                rates[count].append(heartbeats(url, count, args.seconds, pool, timing))
    one = statistics.median(r["rate_per_s"] for r in rates[1])
    two = statistics.median(r["rate_per_s"] for r in rates[2])
    result = {
        "meta": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "lease_timeout_ms": timing.lease_ms,
            "lease_renew_interval_ms": RENEW_MS,
            "kills": args.kills,
            "seconds": args.seconds,
            "runs": args.runs,
        },
        "failover_s": {"p50": _pct(took, 50), "p99": _pct(took, 99), "all": took},
        "heartbeats": {
            "one_node_per_s": one,
            "two_nodes_per_s": two,
            "ratio": two / one,
            "one_node_runs": rates[1],
            "two_nodes_runs": rates[2],
        },
    }
    if not args.no_write:
        write_report(result)
    print(
        f"failover p50 {result['failover_s']['p50']:.2f}s p99 {result['failover_s']['p99']:.2f}s"
        f" (lease {timing.lease_ms / 1000:g}s);"
        f" heartbeats 1 node {one:,.0f}/s, 2 nodes {two:,.0f}/s"
        f" ({two / one:.2f}x)"
    )
    return result


def write_report(result: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    slim = {k: v for k, v in result.items() if k != "heartbeats"}
    slim["heartbeats"] = {k: v for k, v in result["heartbeats"].items() if not k.endswith("_runs")}
    (RESULTS / "cluster.json").write_text(json.dumps(result, indent=2, default=str))
    meta, fo, hb = result["meta"], result["failover_s"], result["heartbeats"]
    gen1 = statistics.median(r["generator_cpu_cores"] for r in hb["one_node_runs"])
    gen2 = statistics.median(r["generator_cpu_cores"] for r in hb["two_nodes_runs"])
    srv1 = statistics.median(r["server_cpu_cores"] for r in hb["one_node_runs"])
    srv2 = statistics.median(r["server_cpu_cores"] for r in hb["two_nodes_runs"])
    per1 = srv1 / hb["one_node_per_s"] * 1e6
    per2 = srv2 / hb["two_nodes_per_s"] * 1e6
    lease = meta["lease_timeout_ms"] / 1000
    lines = [
        "# A cluster on one machine (PostgreSQL started by the benchmark)",
        "",
        f"Python {meta['python']}, {meta['cpus']} CPUs (shared), lease {lease:g} s, renewal"
        f" every {meta['lease_renew_interval_ms']} ms.",
        "",
        "## Failover: SIGKILL of a group's coordinator to its member's first successful"
        " heartbeat at the other node (same member id and generation)",
        "",
        "| kills | p50 s | p99 s | goal: lease + 1 s | met |",
        "|---:|---:|---:|---:|---|",
        f"| {meta['kills']} | {fo['p50']:.2f} | {fo['p99']:.2f} | {lease + 1:g}"
        f" | {'yes' if fo['p99'] <= lease + 1 else 'no'} |",
        "",
        "## Heartbeats: one node against two (closed loop, 2 generator processes, one"
        " connection each at depth 64)",
        "",
        f"Medians of {meta['runs']} alternating runs of {meta['seconds']:g} s.",
        "",
        "| nodes | heartbeats/s | server CPU (cores) | server CPU per heartbeat (µs)"
        " | generator CPU (cores) |",
        "|---:|---:|---:|---:|---:|",
        f"| 1 | {hb['one_node_per_s']:,.0f} | {srv1:.2f} | {per1:.2f} | {gen1:.2f} |",
        f"| 2 | {hb['two_nodes_per_s']:,.0f} | {srv2:.2f} | {per2:.2f} | {gen2:.2f} |",
        "",
        f"Two nodes give {hb['ratio']:.2f}x one node's throughput (goal 1.7x), at"
        f" {per2 / per1:.2f}x its server CPU per heartbeat. The generators and the nodes share"
        f" the machine's cores ({srv2 + gen2:.2f} of {meta['cpus']} busy with two nodes), so"
        " this is a floor for two machines.",
    ]
    (RESULTS / "cluster.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
