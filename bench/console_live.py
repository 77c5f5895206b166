"""An unrelated member's heartbeats while 200 live console pages follow 5,000 groups.

    python -m bench.console_live [--quick] [--pages N] [--groups N] [--seconds S] [--runs R]

The daemon (its own process, uvloop, memory store) holds 5,000 groups, each with a
committed offset. In alternating runs against it, a probe member heartbeats every 10 ms
over its own connection while either nothing else happens (``baseline``) or (``pages``)
200 live pages are open on the console (Groups sorted by last rebalance, Groups by id and
the Overview, as HTML streams, from 20 client addresses behind a trusted proxy) and
another process commits offsets to random groups 200 times a second, so every page has
something new to render all the time. Reports the probe's p50/p99 (medians over runs)
against the target of 50 ms p99, and the updates the pages received. Writes
``bench/results/console_live.json`` and ``.md``. Loopback (127.0.0.1) only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from coordinator.client.connection import connect
from tests.wire import commit, heartbeat, join_static_leader

from .probe import percentile_ms, timed_requests
from .servers import free_port

RESULTS = Path(__file__).parent / "results"
TARGET_P99_MS = 50.0
VIEWS = (
    "/api/stream?view=groups&format=html&sort=last_rebalance&order=desc",
    "/api/stream?view=groups&format=html",
    "/api/stream?view=overview&format=html",
)
ADDRESSES = 20  # page clients, 10 pages each (the per-client cap is 20)


def start(groups: int) -> tuple[subprocess.Popen[bytes], int, int]:
    kafka, http = free_port(), free_port()
    cmd = [
        sys.executable, "-m", "coordinator.commands.cli", "serve",
        "--listen", f"127.0.0.1:{kafka}", "--store", "memory", "--topic", "orders:6",
        "--group-initial-rebalance-delay-ms", "0", "--max-groups", str(groups + 100),
        "--http-listen", f"127.0.0.1:{http}", "--http-trusted-proxy", "127.0.0.1",
        "--log-level", "ERROR",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", http)):
            return proc, kafka, http
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the daemon did not start")


async def make_groups(port: int, groups: int) -> None:
    client = await connect("127.0.0.1", port)
    try:
        for n in range(groups):
            await commit(client, f"group-{n:05d}", {("orders", n % 6): (n, None)})
    finally:
        client.close()


def load(kafka: int, http: int, pages: int, groups: int, seconds: float, out: Any) -> None:
    """Open pages and commits to random groups for ``seconds`` (its own process); puts
    (pages that opened, updates received, commits) on ``out``."""

    async def page(session: aiohttp.ClientSession, n: int, end: float, counts: list[int]) -> None:
        path = VIEWS[n % len(VIEWS)]
        headers = {"X-Forwarded-For": f"198.51.100.{n % ADDRESSES + 1}"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with session.get(path, headers=headers, timeout=timeout) as resp:
            if resp.status != 200:
                return
            counts[0] += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(end - time.monotonic()):
                    async for chunk in resp.content.iter_any():  # no parsing: cheap
                        counts[1] += chunk.count(b"event: update")

    async def committer(end: float, counts: list[int]) -> None:
        client = await connect("127.0.0.1", kafka)
        rng = random.Random(1)
        while time.monotonic() < end:
            group = f"group-{rng.randrange(groups):05d}"
            await commit(client, group, {("orders", 0): (rng.randrange(1 << 30), None)})
            counts[2] += 1
            await asyncio.sleep(0.005)
        client.close()

    async def main() -> None:
        end = time.monotonic() + seconds
        counts = [0, 0, 0]
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(f"http://127.0.0.1:{http}", connector=connector) as s:
            await asyncio.gather(
                committer(end, counts),
                *(page(s, n, end, counts) for n in range(pages)),
                return_exceptions=True,
            )
        out.put(tuple(counts))

    asyncio.run(main())


def probe(port: int, group: str, seconds: float) -> list[float]:
    async def run() -> list[float]:
        c = await connect("127.0.0.1", port)
        member_id, generation = await join_static_leader(c, group, f"{group}-0", b"a")

        async def beat() -> None:
            error = await heartbeat(c, group, member_id, generation, f"{group}-0")
            if error:
                raise RuntimeError(f"heartbeat failed with error {error}")

        latencies = await timed_requests(beat, seconds)
        c.close()
        return latencies

    return asyncio.run(run())


def measure(
    pages: int, groups: int, seconds: float, runs: int, settle_s: float = 3.0
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"baseline": [], "pages": []}
    proc, kafka, http = start(groups)
    ctx = multiprocessing.get_context("spawn")
    try:
        asyncio.run(make_groups(kafka, groups))
        for run in range(runs):
            for condition in out:
                row: dict[str, Any] = {}
                loader = None
                if condition == "pages":
                    queue = ctx.Queue()
                    loader = ctx.Process(
                        target=load,
                        args=(kafka, http, pages, groups, seconds + settle_s + 1, queue),
                    )
                    loader.start()
                    time.sleep(settle_s)  # the pages open and render once
                lat = probe(kafka, f"probe-{run}-{condition}", seconds)
                if loader is not None:
                    opened, updates, commits = queue.get(timeout=seconds + 60)
                    loader.join(30)
                    row.update(pages_open=opened, page_updates=updates, commits=commits)
                row.update(
                    heartbeats=len(lat),
                    p50_ms=percentile_ms(lat, 0.5),
                    p99_ms=percentile_ms(lat, 0.99),
                    max_ms=1000 * lat[-1],
                )
                out[condition].append(row)
                print(condition, row, flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    return out


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    return {c: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for c, rs in runs.items()}


def write_report(summary: dict[str, dict[str, float]], runs: object, args: Any) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "console_live.json").write_text(
        json.dumps(
            {
                "machine": platform.platform(),
                "pages": args.pages,
                "groups": args.groups,
                "seconds": args.seconds,
                "summary": summary,
                "runs": runs,
            },
            indent=2,
        )
        + "\n"
    )
    with_pages = summary["pages"]
    lines = [
        "# Heartbeats while live console pages follow many groups",
        "",
        f"Medians of {args.runs} alternating runs against one daemon with {args.groups} groups;",
        f"a probe member heartbeats every 10 ms for {args.seconds:g} s. `pages`: {args.pages}",
        "live pages (Groups by last rebalance, Groups by id, Overview; HTML streams from 20",
        "client addresses) while offsets are committed to random groups ~200 times a second.",
        "",
        "| condition | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|",
        *(
            f"| {c} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {s['max_ms']:.1f} |"
            for c, s in summary.items()
        ),
        "",
        f"Pages open: {with_pages['pages_open']:.0f}; updates they received in a run:"
        f" {with_pages['page_updates']:.0f}; commits in a run: {with_pages['commits']:.0f}.",
        "",
        f"Target: p99 with the pages open below {TARGET_P99_MS:g} ms: "
        f"{'met' if with_pages['p99_ms'] < TARGET_P99_MS else 'not met'}"
        f" ({with_pages['p99_ms']:.2f} ms).",
    ]
    (RESULTS / "console_live.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run, nothing written")
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.quick:
        args.pages, args.groups, args.seconds, args.runs = 10, 100, 1.0, 1
    runs = measure(args.pages, args.groups, args.seconds, args.runs, 3.0 if not args.quick else 2.0)
    summary = summarise(runs)
    if not args.quick:
        write_report(summary, runs, args)
    for c, s in summary.items():
        print(f"{c:>8}: p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms")
    return summary


if __name__ == "__main__":
    main()
