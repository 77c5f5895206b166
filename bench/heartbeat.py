"""Heartbeat throughput and latency of members of real Stable groups.

Each member is the only member of its own group, joined and synced before measuring (so
every heartbeat is checked against a real member of a Stable group). Scenarios: one
connection at pipeline depth 1 and 64, and 100 connections at depth 1 (over two generator
processes). The servers run one after another within each run, in a rotating order.
"""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import uvloop

from protocol.apis.heartbeat import HeartbeatRequest

from . import groups, load
from .groups import Member
from .servers import ServerProcess


@dataclass(frozen=True)
class Scenario:
    name: str
    connections: int
    depth: int
    workers: int

    @property
    def members(self) -> int:
        return self.connections * max(1, self.depth)


SCENARIOS = (
    Scenario("1 connection, depth 1", 1, 1, 1),
    Scenario("1 connection, depth 64", 1, 64, 1),
    Scenario("100 connections, depth 1", 100, 1, 2),
)


async def _form(port: int, count: int, session_ms: int) -> tuple[int, list[Member]]:
    first = await groups.open_wire(port)
    wires = [first] + [await groups.open_wire(port, first.versions) for _ in range(count - 1)]
    run = f"{time.monotonic_ns():x}"
    try:
        members = await asyncio.gather(
            *(
                groups.join_and_sync(w, f"hb-{run}-{i}", session_timeout_ms=session_ms)
                for i, w in enumerate(wires)
            )
        )
    finally:
        for w in wires:
            w.close()
    return first.versions.pick(HeartbeatRequest), list(members)


def session_ms_for(seconds: float, warmup_s: float, lead_s: float = 2.0) -> int:
    # Members must outlive every scenario of the run. Tansu answers a fresh group's
    # JoinGroup only after half the session timeout, so it is not made longer than needed.
    per_scenario = seconds + warmup_s + lead_s + 1
    return max(6000, math.ceil(2 * 1000 * per_scenario * len(SCENARIOS)))


def measure_server(
    server: ServerProcess, pool: Executor, seconds: float, warmup_s: float, lead_s: float = 2.0
) -> dict[str, dict[str, Any]]:
    """Every scenario against one running server; each starts ``lead_s`` after its jobs
    are handed to the generator processes (room for them to connect)."""
    total = sum(s.members for s in SCENARIOS)
    session_ms = session_ms_for(seconds, warmup_s, lead_s)
    version, members = uvloop.run(_form(server.port, total, session_ms))
    out: dict[str, dict[str, Any]] = {}
    offset = 0
    for scenario in SCENARIOS:
        mine = members[offset : offset + scenario.members]
        offset += scenario.members
        out[scenario.name] = _run(server, pool, scenario, mine, version, seconds, warmup_s, lead_s)
    return out


def _run(
    server: ServerProcess,
    pool: Executor,
    scenario: Scenario,
    members: list[Member],
    version: int,
    seconds: float,
    warmup_s: float,
    lead_s: float,
) -> dict[str, Any]:
    per_conn = [members[i :: scenario.connections] for i in range(scenario.connections)]
    start_at = time.monotonic() + lead_s + warmup_s
    jobs = [
        load.Job(
            port=server.port,
            version=version,
            members=per_conn[w :: scenario.workers],
            depth=scenario.depth,
            interval_s=0.0,
            start_at=start_at,
            seconds=seconds,
            warmup_s=warmup_s,
        )
        for w in range(scenario.workers)
    ]
    futures = [pool.submit(load.run_job, job) for job in jobs]
    time.sleep(max(0.0, start_at - time.monotonic()))
    cpu0 = server.cpu_seconds()
    time.sleep(max(0.0, start_at + seconds - time.monotonic()))
    cpu1 = server.cpu_seconds()
    merged = load.merge([f.result(timeout=seconds + 60) for f in futures], seconds)
    merged["server_cpu_cores"] = (cpu1 - cpu0) / seconds
    merged["connections"] = scenario.connections
    merged["depth"] = scenario.depth
    merged["generator_processes"] = scenario.workers
    return merged
