"""Before/after: the daemon at another git revision against the working tree, interleaved.

    python -m bench.ab --before REV [--runs 5] [--seconds 5] [--rebalance 1000]

Used to record what each hot-path change gave (``bench/README.md``): the same heartbeat
scenarios as ``python -m bench``, and optionally one rebalance size, alternating the two
daemons within each run; medians over runs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import subprocess
import tarfile
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from . import heartbeat, rebalance, servers

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, into: Path) -> Path:
    """``coordinator/`` and ``protocol/`` as of ``rev``, unpacked under ``into``."""
    archive = into / "src.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "coordinator", "protocol"],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into / "src", filter="data")
    return into / "src"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rebalance", type=int, default=0, help="also N members join (0: no)")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, list[float]]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        sources: dict[str, Path | None] = {"before": export(args.before, Path(tmp)), "after": None}
        for r in range(args.runs):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for label in order:
                with servers.start_daemon(sources[label], label) as server:
                    for scenario, row in heartbeat.measure_server(
                        server, pool, args.seconds, 0.5
                    ).items():
                        slot = rows.setdefault(f"{scenario} heartbeats/s", {})
                        slot.setdefault(label, []).append(row["rate_per_s"])
                        slot = rows.setdefault(f"{scenario} p99 ms", {})
                        slot.setdefault(label, []).append(row["p99_ms"])
                    if args.rebalance:
                        got = pool.submit(
                            rebalance.run_one, server.port, server.pid, args.rebalance, "join", 6000
                        ).result()
                        if "seconds" in got:
                            for key in ("seconds", "server_cpu_s"):
                                slot = rows.setdefault(f"{args.rebalance} join {key}", {})
                                slot.setdefault(label, []).append(got[key])
    summary = {
        key: {label: statistics.median(v) for label, v in by.items()} for key, by in rows.items()
    }
    print(f"| measure (median of {args.runs}) | before ({args.before}) | after | after/before |")
    print("|---|---:|---:|---:|")
    for key, by in summary.items():
        b, a = by.get("before", float("nan")), by.get("after", float("nan"))
        print(f"| {key} | {b:,.3f} | {a:,.3f} | {a / b if b else float('nan'):.2f} |")
    return summary


if __name__ == "__main__":
    main()
