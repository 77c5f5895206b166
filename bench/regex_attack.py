"""Heartbeat latency while one client sends its worst KIP-848 regex heartbeats (issue 32):
does compiling a client's SubscribedTopicRegex delay everyone else?

    python -m bench.regex_attack [--quick] [--runs R] [--seconds S] [--before SRC]

A probe member of a consumer group heartbeats every 10 ms over its own connection; in
alternating runs against the same daemon nothing else happens (baseline), or one client
(another process, 4 connections, as many as regex resolutions may wait at once) sends
heartbeats that each subscribe to a new pattern RE2 takes about a second to compile
(counted repetitions, 1.4 KB), interleaved with new 1.6 MB patterns (over the size limit).
Reports p50/p99 per condition (medians over runs) against the target of 50 ms p99 under
attack, and how much the daemon's resident memory grew. ``--before SRC`` also measures
the attack against a daemon from another source tree (e.g. a checkout of the previous
main), in the same run. Writes ``bench/results/regex_attack.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from coordinator.client.connection import connect
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

from .probe import percentile_ms, timed_requests
from .servers import start_daemon

RESULTS = Path(__file__).parent / "results"
TARGET_P99_MS = 50.0
DAEMON_ARGS = ("--store", "memory", "--topic", "orders:6", "--log-level", "ERROR")
ATTACK_CONNECTIONS = 4


def slow_pattern(i: int) -> str:
    return f"(q{i})" + "[a-z]{1,100}" * 120


def huge_pattern(i: int) -> str:
    return f"(h{i})" + "(a|b)" * 320_000


def _join(group: str, member: str, pattern: str | None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=[] if pattern is not None else ["orders"],
        subscribed_topic_regex=pattern,
        topic_partitions=[],
    )


def attack(port: int, seconds: float, seed: int) -> None:
    """One client's worst regex heartbeats for ``seconds`` (run in its own process)."""

    async def connection(n: int) -> None:
        c = await connect("127.0.0.1", port)
        end = time.monotonic() + seconds
        i = 0
        with contextlib.suppress(ConnectionError, TimeoutError):
            while time.monotonic() < end:
                i += 1
                key = seed * 1_000_000 + n * 10_000 + i
                pattern = huge_pattern(key) if i % 2 == 0 else slow_pattern(key)
                req = _join(f"attack-{n}", f"attacker-{n}", pattern)
                await asyncio.wait_for(
                    c.request(req, 1, ConsumerGroupHeartbeatResponse), end - time.monotonic() + 10
                )
        c.close()

    asyncio.run(_gather(*(connection(n) for n in range(ATTACK_CONNECTIONS))))


async def _gather(*tasks: Any) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)


def probe_latencies(
    port: int, group: str, seconds: float, attacked: bool, seed: int
) -> list[float]:
    """Heartbeat round trips (s, sorted) of one consumer-protocol member."""
    attacker = multiprocessing.get_context("spawn").Process(
        target=attack, args=(port, seconds + 1.0, seed)
    )

    async def probe() -> list[float]:
        c = await connect("127.0.0.1", port)
        joined = await c.request(
            _join(group, f"{group}-m", None), 1, ConsumerGroupHeartbeatResponse
        )
        if joined.error_code:
            raise RuntimeError(f"join failed: {joined.error_code} {joined.error_message}")
        beat = ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=f"{group}-m", member_epoch=joined.member_epoch
        )
        if attacked:
            attacker.start()
            await asyncio.sleep(1.0)  # the worker starts, the attack gets going

        async def send() -> None:
            r = await c.request(beat, 1, ConsumerGroupHeartbeatResponse)
            if r.error_code:
                raise RuntimeError(f"heartbeat failed: {r.error_code} {r.error_message}")

        latencies = await timed_requests(send, seconds)
        c.close()
        return latencies

    try:
        return asyncio.run(probe())
    finally:
        if attacked:
            attacker.join(seconds + 30)
            if attacker.is_alive():
                attacker.kill()


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096 / (1 << 20)


def measure(runs: int, seconds: float, before: Path | None) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {"baseline": [], "under attack": []}
    sources: list[tuple[str, Path | None]] = [("", None)]
    if before is not None:
        out["under attack, before"] = []
        sources.append((", before", before))
    for suffix, src in sources:
        with start_daemon(src=src, args=DAEMON_ARGS) as daemon:
            pid = daemon.proc.pid
            start_rss = _rss_mb(pid)
            for run in range(runs):  # alternating, so machine noise hits both alike
                for condition in ("baseline", "under attack"):
                    if src is not None and condition == "baseline":
                        continue
                    group = f"probe-{run}-{condition[0]}"
                    lat = probe_latencies(
                        daemon.port, group, seconds, condition == "under attack", run
                    )
                    out[condition + suffix].append(
                        {
                            "heartbeats": len(lat),
                            "p50_ms": percentile_ms(lat, 0.5),
                            "p99_ms": percentile_ms(lat, 0.99),
                            "max_ms": 1000 * lat[-1],
                            "rss_growth_mb": _rss_mb(pid) - start_rss,
                        }
                    )
    return out


def summarise(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        condition: {
            "p50_ms": statistics.median(r["p50_ms"] for r in rs),
            "p99_ms": statistics.median(r["p99_ms"] for r in rs),
            "max_ms": max(r["max_ms"] for r in rs),
            "heartbeats_per_run": statistics.median(r["heartbeats"] for r in rs),
            "rss_growth_mb": max(r["rss_growth_mb"] for r in rs),
        }
        for condition, rs in runs.items()
        if rs
    }


def _tree(src: Path) -> str:
    commit = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return f"{src} at {commit}" if commit else str(src)


def write_report(
    summary: dict[str, dict[str, float]], runs: dict[str, object], n: int, before: Path | None
) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "regex_attack.json").write_text(
        json.dumps({"machine": platform.platform(), "summary": summary, "runs": runs}, indent=2)
        + "\n"
    )
    attacked = summary["under attack"]["p99_ms"]
    lines = [
        "# Heartbeat latency while one client sends its worst regex heartbeats",
        "",
        f"Medians of {n} alternating runs against one daemon; a consumer-protocol probe",
        "heartbeats every 10 ms. Attack: one client, 4 connections, each heartbeat a new",
        "SubscribedTopicRegex: 1.4 KB of counted repetitions (about a second for RE2 to",
        "compile) or 1.6 MB (over the 64 KB limit). RSS: the daemon's growth, largest seen.",
        *([f"Before: the daemon of {_tree(before)}."] if before is not None else []),
        "",
        "| condition | p50 ms | p99 ms | max ms | RSS growth MB |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {c} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {s['max_ms']:.0f} |"
            f" {s['rss_growth_mb']:.0f} |"
            for c, s in summary.items()
        ),
        "",
        f"Target: p99 under attack below {TARGET_P99_MS:g} ms: "
        f"{'met' if attacked < TARGET_P99_MS else 'not met'} ({attacked:.2f} ms).",
    ]
    (RESULTS / "regex_attack.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short run, nothing written")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--before", type=Path, help="also attack a daemon from this tree")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.seconds = 1, 1.5
    runs = measure(args.runs, args.seconds, args.before)
    summary = summarise(runs)
    if not args.quick:
        write_report(summary, dict(runs), args.runs, args.before)
    for condition, s in summary.items():
        print(f"{condition:>22}: p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms")
    return summary


if __name__ == "__main__":
    main()
