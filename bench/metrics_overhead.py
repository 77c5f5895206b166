"""What ``--metrics-listen`` and ``--journal-dir`` cost on the heartbeat path.

    python -m bench.metrics_overhead [--quick] [--no-write]

Calls the runtime's request entry point (``Runtime.handle``: handler, state machine, effects,
and the metrics hook when on) with a decoded Heartbeat v4 of a Stable group's member, in a
tight loop, without sockets: microseconds per heartbeat with metrics off and on (median of
alternating repeats). Writes ``bench/results/metrics_overhead.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from coordinator.group.config import GroupConfig
from coordinator.group.requests import JoinGroupInput, SyncGroupInput
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.handlers.outcome import Pending
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.telemetry.metrics import Metrics
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.frames import decode_request, encode_request

RESULTS = Path(__file__).parent / "results"


async def stable_member(runtime: Runtime) -> tuple[str, int]:
    """One member, joined and synced; returns (member id, generation)."""
    now = runtime.now_ms()
    join = Pending()
    runtime.apply(
        runtime.groups.join_group(
            join,
            JoinGroupInput(
                group_id="bench",
                member_id="",
                group_instance_id=None,
                client_id="bench",
                client_host="/127.0.0.1",
                session_timeout_ms=30000,
                rebalance_timeout_ms=30000,
                protocol_type="consumer",
                protocols=[("range", b"")],
                api_version=3,
                reason=None,
            ),
            now,
        )
    )
    await asyncio.sleep(0.05)  # the initial-delay timer (0 ms) completes the join
    member_id, generation = join.result.member_id, join.result.generation_id
    sync = Pending()
    runtime.apply(
        runtime.groups.sync_group(
            sync,
            SyncGroupInput("bench", generation, member_id, None, "consumer", "range", [], 3),
            runtime.now_ms(),
        )
    )
    await asyncio.sleep(0.01)  # the assignment is answered once "persisted"
    assert sync.answered and sync.result.error_code == 0
    return member_id, generation


async def measure(heartbeats: int, repeats: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    runtime = Runtime(
        Settings(store="memory", group=GroupConfig(initial_rebalance_delay_ms=0)), loop
    )
    try:
        member_id, generation = await stable_member(runtime)
        body = HeartbeatRequest(group_id="bench", generation_id=generation, member_id=member_id)
        request = decode_request(encode_request(body, 4, 1, "bench")[4:])
        ctx = ConnectionContext(client_host="/127.0.0.1", client_id="bench")
        metrics = Metrics()
        timings: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(repeats):
            for mode in ("off", "on"):
                runtime.metrics = metrics if mode == "on" else None
                started = time.perf_counter()
                for _ in range(heartbeats):
                    reply = runtime.handle(request, ctx)
                timings[mode].append((time.perf_counter() - started) / heartbeats * 1e6)
                assert getattr(reply, "error_code", None) == 0
    finally:
        runtime.timers.cancel_all()
    off, on = statistics.median(timings["off"]), statistics.median(timings["on"])
    return {"off_us": round(off, 2), "on_us": round(on, 2), "overhead_us": round(on - off, 2)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    heartbeats, repeats = (2_000, 3) if args.quick else (50_000, 7)
    result: dict[str, Any] = asyncio.run(measure(heartbeats, repeats))
    result.update(heartbeats=heartbeats, repeats=repeats, python=platform.python_version())
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "metrics_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "metrics_overhead.md").write_text(
            "# Heartbeat cost with and without `--metrics-listen`\n\n"
            f"`Runtime.handle` of a Heartbeat v4, {heartbeats:,} per repeat, median of "
            f"{repeats} alternating repeats (Python {result['python']}).\n\n"
            "| metrics | µs per heartbeat |\n|---|---:|\n"
            f"| off | {result['off_us']} |\n| on | {result['on_us']} |\n"
            f"| overhead | {result['overhead_us']} |\n"
        )
    print(
        f"heartbeat: {result['off_us']} µs without metrics, {result['on_us']} µs with "
        f"(+{result['overhead_us']} µs)"
    )
    return result


if __name__ == "__main__":
    main()
