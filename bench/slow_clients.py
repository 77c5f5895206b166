"""Heartbeat latency while slow clients attack: does a slow-loris or a client that never
reads its responses delay everyone else's heartbeats?

    python -m bench.slow_clients [--quick] [--runs R] [--seconds S]

A probe member heartbeats every 10 ms over its own connection; in alternating runs against
the same daemon, nothing else happens (baseline) or 20 slow-loris clients (one byte every
100 ms) and 5 clients that pipeline requests without reading (both in another process) are
connected. Reports p50/p99 per condition (medians over runs) against the target of 10 ms
p99 under attack. Writes ``bench/results/slow_clients.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import platform
import statistics
import time
from pathlib import Path

from coordinator.client.connection import connect
from protocol.apis.metadata import MetadataRequest
from protocol.frames import encode_request
from tests.wire import heartbeat, join_static_leader

from .probe import percentile_ms, timed_requests
from .servers import start_daemon

RESULTS = Path(__file__).parent / "results"
TARGET_P99_MS = 10.0
DAEMON_ARGS = (
    "--request-receive-timeout-ms",
    "1000",
    "--slow-reader-timeout-ms",
    "1000",
    "--max-buffered-response-bytes",
    "65536",
    "--log-level",
    "ERROR",
)


def slow_clients(port: int, seconds: float) -> None:
    """Slow-loris and never-reading clients for ``seconds`` (run in its own process)."""

    async def loris() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frame = encode_request(MetadataRequest(topics=None), 12, 1)
        with contextlib.suppress(ConnectionError):
            for byte in frame:
                writer.write(bytes([byte]))
                await asyncio.sleep(0.1)
                if reader.at_eof():
                    return

    async def never_reads() -> None:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.transport.pause_reading()  # type: ignore[attr-defined]
        frame = encode_request(MetadataRequest(topics=None), 12, 1)
        end = time.monotonic() + seconds
        with contextlib.suppress(ConnectionError):
            while time.monotonic() < end and not writer.is_closing():
                if writer.transport.get_write_buffer_size() < 1 << 20:
                    writer.write(frame * 500)
                await asyncio.sleep(0.01)

    async def main() -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            tasks = [loris() for _ in range(20)] + [never_reads() for _ in range(5)]
            await asyncio.wait_for(
                asyncio.gather(*tasks, return_exceptions=True), end - time.monotonic() + 5
            )

    with contextlib.suppress(TimeoutError):
        asyncio.run(main())


def probe_latencies(port: int, group: str, seconds: float, attack: bool) -> list[float]:
    """Heartbeat round trips (s, sorted) of one static member, with or without attackers."""
    attackers = multiprocessing.get_context("spawn").Process(
        target=slow_clients, args=(port, seconds + 1.0)
    )

    async def probe() -> list[float]:
        c = await connect("127.0.0.1", port)
        member_id, generation = await join_static_leader(c, group, f"{group}-0", b"a")
        if attack:
            attackers.start()
            await asyncio.sleep(0.5)  # let the attack get going

        async def beat() -> None:
            error = await heartbeat(c, group, member_id, generation, f"{group}-0")
            if error:
                raise RuntimeError(f"heartbeat failed with error {error}")

        latencies = await timed_requests(beat, seconds)
        c.close()
        return latencies

    try:
        return asyncio.run(probe())
    finally:
        if attack:
            attackers.join(seconds + 15)
            if attackers.is_alive():
                attackers.kill()


def measure(runs: int, seconds: float) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {"baseline": [], "under attack": []}
    with start_daemon(args=("--store", "memory", *DAEMON_ARGS)) as daemon:
        for run in range(runs):  # alternating, so machine noise hits both alike
            for condition in out:
                group = f"probe-{run}-{condition[0]}"
                lat = probe_latencies(daemon.port, group, seconds, condition == "under attack")
                out[condition].append(
                    {
                        "heartbeats": len(lat),
                        "p50_ms": percentile_ms(lat, 0.5),
                        "p99_ms": percentile_ms(lat, 0.99),
                    }
                )
    return out


def summarise(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        condition: {
            "p50_ms": statistics.median(r["p50_ms"] for r in rs),
            "p99_ms": statistics.median(r["p99_ms"] for r in rs),
            "heartbeats_per_run": statistics.median(r["heartbeats"] for r in rs),
        }
        for condition, rs in runs.items()
    }


def write_report(summary: dict[str, dict[str, float]], runs: dict[str, object], n: int) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "slow_clients.json").write_text(
        json.dumps({"machine": platform.platform(), "summary": summary, "runs": runs}, indent=2)
        + "\n"
    )
    attacked = summary["under attack"]["p99_ms"]
    lines = [
        "# Heartbeat latency under slow-client attack",
        "",
        f"Medians of {n} alternating runs against one daemon; a probe heartbeats every 10 ms.",
        "Attack: 20 slow-loris clients (1 byte / 100 ms) and 5 clients pipelining requests",
        "without reading, from another process.",
        "",
        "| condition | p50 ms | p99 ms |",
        "|---|---:|---:|",
        *(f"| {c} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} |" for c, s in summary.items()),
        "",
        f"Target: p99 under attack below {TARGET_P99_MS:g} ms: "
        f"{'met' if attacked < TARGET_P99_MS else 'not met'} ({attacked:.2f} ms).",
    ]
    (RESULTS / "slow_clients.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short run, nothing written")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.seconds = 1, 1.0
    runs = measure(args.runs, args.seconds)
    summary = summarise(runs)
    if not args.quick:
        write_report(summary, dict(runs), args.runs)
    for condition, s in summary.items():
        print(f"{condition:>13}: p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms")
    return summary


if __name__ == "__main__":
    main()
