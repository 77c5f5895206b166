"""Durable commits: what acknowledging only after fsync costs, against the same daemon with
an in-memory store, and the same on PostgreSQL (a server the benchmark starts, fenced writes
as a cluster node makes them), measured in the same run.

    python -m bench.durable [--quick] [--seconds S] [--runs R]

For 1, 10 and 100 concurrent committers (one connection each, each committing
``--partitions`` partitions per OffsetCommit in a closed loop): committed partitions per
second, and p50/p99 commit latency. Medians over ``--runs`` alternating runs per store.
Writes ``bench/results/durable.json`` and ``bench/results/durable.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from coordinator.client.connection import connect
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from tests.postgres_server import postgres_server

from .servers import ServerProcess, start_daemon

RESULTS = Path(__file__).parent / "results"
STORES = ("sqlite", "memory", "postgres")


@dataclass
class Run:
    store: str
    committers: int
    partitions_per_commit: int
    seconds: float
    commits: int
    partitions_per_s: float
    p50_ms: float
    p99_ms: float


def start_store_daemon(store: str, data_dir: Path, database_url: str | None) -> ServerProcess:
    args: tuple[str, ...] = ("--data-dir", str(data_dir), "--store", store, "--topic", "bench:1000")
    if store == "postgres":
        assert database_url is not None
        args += ("--database-url", database_url)
    return start_daemon(name=store, args=(*args, "--log-level", "WARNING"))


async def _committer(
    port: int, index: int, partitions: int, stop_at: float, latencies: list[float]
) -> int:
    c = await connect("127.0.0.1", port)
    base = index * partitions % 1000
    offset = 0
    commits = 0
    try:
        while time.perf_counter() < stop_at:
            offset += 1
            req = OffsetCommitRequest(
                group_id=f"bench-{index}",
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[
                    OffsetCommitRequestTopic(
                        name="bench",
                        partitions=[
                            OffsetCommitRequestPartition(
                                partition_index=(base + p) % 1000, committed_offset=offset
                            )
                            for p in range(partitions)
                        ],
                    )
                ],
            )
            sent = time.perf_counter()
            resp = await c.request(req, 8, OffsetCommitResponse)
            latencies.append(time.perf_counter() - sent)
            assert all(p.error_code == 0 for t in resp.topics for p in t.partitions)
            commits += 1
    finally:
        c.close()
    return commits


async def _load(port: int, committers: int, partitions: int, seconds: float) -> Run:
    latencies: list[float] = []
    start = time.perf_counter()
    stop_at = start + seconds
    counts = await asyncio.gather(
        *(_committer(port, i, partitions, stop_at, latencies) for i in range(committers))
    )
    elapsed = time.perf_counter() - start
    latencies.sort()
    commits = sum(counts)
    return Run(
        store="",
        committers=committers,
        partitions_per_commit=partitions,
        seconds=elapsed,
        commits=commits,
        partitions_per_s=commits * partitions / elapsed,
        p50_ms=1000 * latencies[len(latencies) // 2],
        p99_ms=1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    )


def measure(committer_counts: list[int], partitions: int, seconds: float, runs: int) -> list[Run]:
    results: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp, postgres_server(fsync=True) as pg:
        url = pg.create_database("durable")
        daemons = {store: start_store_daemon(store, Path(tmp) / store, url) for store in STORES}
        try:
            for committers in committer_counts:
                for _ in range(runs):
                    for store in STORES:  # alternate, so drift in machine load hits both
                        run = asyncio.run(
                            _load(daemons[store].port, committers, partitions, seconds)
                        )
                        run.store = store
                        results.append(run)
        finally:
            for d in daemons.values():
                d.stop()
    return results


def summarise(results: list[Run]) -> list[dict[str, float | int | str]]:
    rows: list[dict[str, float | int | str]] = []
    for committers in sorted({r.committers for r in results}):
        row: dict[str, float | int | str] = {"committers": committers}
        for store in STORES:
            mine = [r for r in results if r.store == store and r.committers == committers]
            row[f"{store}_partitions_per_s"] = statistics.median(r.partitions_per_s for r in mine)
            row[f"{store}_p50_ms"] = statistics.median(r.p50_ms for r in mine)
            row[f"{store}_p99_ms"] = statistics.median(r.p99_ms for r in mine)
        row["durable_over_memory"] = float(row["sqlite_partitions_per_s"]) / float(
            row["memory_partitions_per_s"]
        )
        row["postgres_over_sqlite"] = float(row["postgres_partitions_per_s"]) / float(
            row["sqlite_partitions_per_s"]
        )
        rows.append(row)
    return rows


def write_report(rows: list[dict[str, float | int | str]], results: list[Run], args: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "args": args}
    (RESULTS / "durable.json").write_text(
        json.dumps({"meta": meta, "summary": rows, "runs": [asdict(r) for r in results]}, indent=2)
    )
    lines = [
        "# Durable commits: SQLite (fsync before ack) and PostgreSQL vs in-memory store",
        "",
        f"Medians of alternating runs; {args}.",
        "",
        "| committers | sqlite partitions/s | p50 ms | p99 ms "
        "| memory partitions/s | p50 ms | p99 ms | sqlite/memory "
        "| postgres partitions/s | p50 ms | p99 ms | postgres/sqlite |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['committers']} | {float(r['sqlite_partitions_per_s']):,.0f} "
            f"| {float(r['sqlite_p50_ms']):.2f} | {float(r['sqlite_p99_ms']):.2f} "
            f"| {float(r['memory_partitions_per_s']):,.0f} | {float(r['memory_p50_ms']):.2f} "
            f"| {float(r['memory_p99_ms']):.2f} | {float(r['durable_over_memory']):.2f} "
            f"| {float(r['postgres_partitions_per_s']):,.0f} | {float(r['postgres_p50_ms']):.2f} "
            f"| {float(r['postgres_p99_ms']):.2f} | {float(r['postgres_over_sqlite']):.2f} |"
        )
    (RESULTS / "durable.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> list[dict[str, float | int | str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run, to prove it works")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results")
    args = parser.parse_args(argv)
    counts = [1, 10, 100]
    if args.quick:
        args.seconds, args.runs, counts = 0.3, 1, [1, 10]
    results = measure(counts, args.partitions, args.seconds, args.runs)
    rows = summarise(results)
    described = (
        f"{args.runs} runs x {args.seconds:g}s per point, {args.partitions} partitions per commit"
    )
    if not args.no_write:
        write_report(rows, results, described)
    for r in rows:
        print(
            f"{r['committers']:>4} committers: sqlite {float(r['sqlite_partitions_per_s']):>9,.0f}"
            f" p/s (p99 {float(r['sqlite_p99_ms']):.1f} ms), memory"
            f" {float(r['memory_partitions_per_s']):>9,.0f} p/s"
            f" (p99 {float(r['memory_p99_ms']):.1f} ms), ratio"
            f" {float(r['durable_over_memory']):.2f}; postgres"
            f" {float(r['postgres_partitions_per_s']):>9,.0f} p/s"
            f" (p99 {float(r['postgres_p99_ms']):.1f} ms)"
        )
    return rows


if __name__ == "__main__":
    main()
