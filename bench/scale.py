"""Scale: many members in many groups, idle but heartbeating every few seconds (daemon only).

Groups of ``--per-group`` members are formed in batches (one connection per member while it
joins, since a parked JoinGroup blocks its connection; the connections are reused batch
after batch and closed afterwards: members outlive their join connection, as in Kafka).
Then the daemon's RSS is read (bytes per idle member = growth over the empty daemon /
members), and every member heartbeats once per ``interval`` over a few multiplexed,
pipelined connections (Kafka clients may send many members' requests on one connection),
from two generator processes: heartbeat p50/p99, server CPU % and RSS under that load.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Executor
from typing import Any

import uvloop

from . import groups, load
from .groups import Member
from .servers import ServerProcess

SESSION_MS = 300_000  # formation of the largest run takes well under this


async def _form(
    port: int, first_group: int, count: int, per_group: int, join_connections: int
) -> list[Member]:
    wires = [await groups.open_wire(port)]
    while len(wires) < join_connections:
        wires.append(await groups.open_wire(port, wires[0].versions))
    batch = max(1, join_connections // per_group)
    members: list[Member] = []
    timeouts = {"session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": 60000}
    try:
        for start in range(first_group, first_group + count, batch):
            ids = range(start, min(start + batch, first_group + count))
            formed = await asyncio.gather(
                *(
                    groups.form_group(
                        wires[k * per_group : (k + 1) * per_group], f"scale-{g}", **timeouts
                    )
                    for k, g in enumerate(ids)
                )
            )
            members += [m for pairs in formed for _, m in pairs]
    finally:
        for w in wires:
            w.close()
    return members


def form_share(
    port: int, first_group: int, count: int, per_group: int, join_connections: int
) -> list[Member]:
    """Entry point of a generator process: form groups [first, first+count)."""
    return uvloop.run(_form(port, first_group, count, per_group, join_connections))


def measure(
    server: ServerProcess,
    pool: Executor,
    *,
    groups_n: int,
    per_group: int,
    interval_s: float,
    heartbeat_connections: int,
    seconds: float,
    workers: int = 2,
    lead_s: float = 2.0,
) -> dict[str, Any]:
    rss_empty = server.rss_bytes()
    t0 = time.monotonic()
    share = -(-groups_n // workers)
    futures = [
        pool.submit(
            form_share,
            server.port,
            w * share,
            min(share, groups_n - w * share),
            per_group,
            min(200, per_group * share),
        )
        for w in range(workers)
        if w * share < groups_n
    ]
    members = [m for f in futures for m in f.result(timeout=900)]
    formed_s = time.monotonic() - t0
    time.sleep(1.0)  # join connections closed; let the daemon release them
    rss_idle = server.rss_bytes()
    version = 4
    conns = [members[i::heartbeat_connections] for i in range(heartbeat_connections)]
    warmup_s = interval_s  # one full round before measuring
    start_at = time.monotonic() + lead_s + warmup_s  # room for the generators to connect
    jobs = [
        load.Job(
            port=server.port,
            version=version,
            members=conns[w::workers],
            depth=0,
            interval_s=interval_s,
            start_at=start_at,
            seconds=seconds,
            warmup_s=warmup_s,
        )
        for w in range(workers)
    ]
    futures_hb = [pool.submit(load.run_job, job) for job in jobs]
    time.sleep(max(0.0, start_at - time.monotonic()))
    cpu0 = server.cpu_seconds()
    rss_peak = 0
    while time.monotonic() < start_at + seconds:
        rss_peak = max(rss_peak, server.rss_bytes())
        time.sleep(min(1.0, max(0.0, start_at + seconds - time.monotonic())))
    cpu1 = server.cpu_seconds()
    merged = load.merge([f.result(timeout=seconds + 120) for f in futures_hb], seconds)
    merged.update(
        {
            "members": len(members),
            "groups": groups_n,
            "per_group": per_group,
            "formation_s": formed_s,
            "interval_s": interval_s,
            "heartbeat_connections": heartbeat_connections,
            "generator_processes": workers,
            "server_cpu_percent": 100 * (cpu1 - cpu0) / seconds,
            "rss_empty_mb": rss_empty / 2**20,
            "rss_idle_mb": rss_idle / 2**20,
            "rss_under_load_mb": rss_peak / 2**20,
            "rss_bytes_per_idle_member": (rss_idle - rss_empty) / max(1, len(members)),
        }
    )
    return merged
