"""Rebalance latency and its server CPU cost.

* ``join``: N members join a fresh group at once (after a start barrier: every connection
  is open before it). Each does what a consumer does: JoinGroup, again with its id on
  MEMBER_ID_REQUIRED (KIP-394), then SyncGroup; the leader computes a round-robin
  assignment of 100 partitions over all members. Measured: from the barrier to the last
  SyncGroup response, and the server's CPU time over that interval.
* ``leave``: a Stable group of N (formed before the barrier); at the barrier one member (not
  the leader) sends LeaveGroup; once it is answered, every other member sends a Heartbeat
  (as a consumer learns of a rebalance; REBALANCE_IN_PROGRESS expected), rejoins with its
  member id and syncs. Same measurements.

Each measurement runs in one generator process with one connection per member (a parked
JoinGroup blocks its connection, so N members need N connections). On a 2-core machine
the server has one core and the generator the other; more generator processes would only
share that core, so the generator's own CPU is reported instead (if it approaches the
elapsed time, the generator, not the server, was the limit).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

import uvloop

from . import groups
from .servers import cpu_seconds

MODES = ("join", "leave")


async def _open(port: int, n: int) -> list[groups.Wire]:
    # Every connection asks ApiVersions first, as a consumer's does: the barrier then waits
    # until the server has accepted and answered all N. A connect() returns once the kernel
    # has done the handshake; thousands opened faster than the server accepts them overflow
    # its listen queue, and those connections come alive only as the kernel retries (1, 2,
    # 4... s later), each starting yet another rebalance (a 5,000-member join went through
    # 37 generations in 27 s that way).
    wires: list[groups.Wire] = []
    while len(wires) < n:
        batch = min(500, n - len(wires))
        wires += await asyncio.gather(*(groups.open_wire(port) for _ in range(batch)))
    return wires


async def _measure(
    port: int, server_pid: int, n: int, mode: str, session_ms: int
) -> dict[str, Any]:
    wires = await _open(port, n)
    group = f"rb-{mode}-{n}-{time.monotonic_ns():x}"
    timeouts = {"session_timeout_ms": session_ms, "rebalance_timeout_ms": 60000}
    # The N connections (and the formed group in ``leave``) outlive the measurement: a full
    # collection walking them in the measured interval cost the generator ~35 ms.
    gc.freeze()
    try:
        if mode == "join":
            cpu0, gen0, t0 = cpu_seconds(server_pid), time.process_time(), time.monotonic()
            pairs = await groups.form_group(wires, group, **timeouts)
        else:
            pairs = await groups.form_group(wires, group, **timeouts)
            gc.freeze()
            await asyncio.sleep(0.2)
            out = next(i for i, (_, m) in enumerate(pairs) if not m.leader)
            cpu0, gen0, t0 = cpu_seconds(server_pid), time.process_time(), time.monotonic()
            await groups.leave(*pairs[out])
            await groups.rejoin_group(pairs[:out] + pairs[out + 1 :], group, **timeouts)
        elapsed = time.monotonic() - t0
        result = {
            "members": n,
            "mode": mode,
            "seconds": elapsed,
            "server_cpu_s": cpu_seconds(server_pid) - cpu0,
            "generator_cpu_s": time.process_time() - gen0,
            "connections": n,
            "ok": True,
        }
        # Outside the measured interval, the members leave, as consumers that close do:
        # left to their sessions, a size's members expired (and their group rebalanced)
        # during the next size's measurement on the same server.
        await groups.leave_all(wires[0], group, [m.member_id for _, m in pairs])
        return result
    finally:
        gc.unfreeze()
        for w in wires:
            w.close()


def run_one(
    port: int, server_pid: int, n: int, mode: str, session_ms: int, limit_s: float = 120.0
) -> dict[str, Any]:
    """Entry point of the generator process: one measurement, given up after ``limit_s``."""
    try:
        return uvloop.run(
            asyncio.wait_for(_measure(port, server_pid, n, mode, session_ms), timeout=limit_s)
        )
    except Exception as exc:
        reason = f"not Stable within {limit_s:g} s" if isinstance(exc, TimeoutError) else exc
        return {"members": n, "mode": mode, "failed": f"{type(exc).__name__}: {reason}"}
