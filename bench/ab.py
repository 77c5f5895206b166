"""Before/after: the daemon at several git revisions, interleaved in the same runs.

    python -m bench.ab REV [REV ...] [--runs 5] [--seconds 4] [--rebalance 1000]

``.`` is the working tree. Used to record what each hot-path change gave
(``bench/README.md``): the heartbeat scenarios of ``python -m bench`` and optionally one
rebalance size, the daemons alternating within each run (rotating order); medians over
runs, each column compared with the first. Besides rates, the server's CPU per heartbeat
is reported: on a shared machine it is far steadier than a rate.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import heartbeat, rebalance, servers

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, into: Path) -> Path:
    """``coordinator/`` and ``protocol/`` as of ``rev``, unpacked under ``into``, with its
    compiled heartbeat lane built in place where ``rev`` has one (else an older daemon would
    be measured on its pure-Python lane against this checkout's compiled one)."""
    into.mkdir(parents=True)
    archive = into / "src.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "coordinator", "protocol"],
        check=True,
    )
    src = into / "src"
    with tarfile.open(archive) as tar:
        tar.extractall(src, filter="data")
    if (src / "coordinator" / "fastlane" / "_heartbeats.c").exists():
        setup = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:setup.py"], capture_output=True, check=True
        ).stdout
        (src / "setup.py").write_bytes(setup)
        built = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=src,
            capture_output=True,
        )
        if built.returncode != 0 or not list(src.glob("coordinator/fastlane/_heartbeats*.so")):
            raise SystemExit(f"{rev}: its compiled heartbeat lane did not build")
    return src


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("revs", nargs="+", help="git revisions; '.' is the working tree")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rebalance", type=int, default=0, help="also N members join (0: no)")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, list[float]]] = {}

    def add(key: str, label: str, value: float) -> None:
        rows.setdefault(key, {}).setdefault(label, []).append(value)

    with (
        tempfile.TemporaryDirectory() as tmp,
        ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        sources: dict[str, Path | None] = {
            rev: None if rev == "." else export(rev, Path(tmp) / str(i))
            for i, rev in enumerate(args.revs)
        }
        labels = list(sources)
        for r in range(args.runs):
            for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                with servers.start_daemon(sources[label], label) as server:
                    measured = heartbeat.measure_server(server, pool, args.seconds, 0.5)
                    for scenario, row in measured.items():
                        add(f"{scenario}: heartbeats/s", label, row["rate_per_s"])
                        add(f"{scenario}: p99 ms", label, row["p99_ms"])
                        cpu_us = 1e6 * row["server_cpu_cores"] / max(1.0, row["rate_per_s"])
                        add(f"{scenario}: server CPU µs/heartbeat", label, cpu_us)
                    if args.rebalance:
                        got = pool.submit(
                            rebalance.run_one, server.port, server.pid, args.rebalance, "join", 6000
                        ).result()
                        if "seconds" in got:
                            add(f"{args.rebalance} join: seconds", label, got["seconds"])
                            add(f"{args.rebalance} join: server CPU s", label, got["server_cpu_s"])
    summary: dict[str, dict[str, float]] = {
        key: {label: statistics.median(v) for label, v in by.items()} for key, by in rows.items()
    }
    first = labels[0]
    print(f"| measure (median of {args.runs}) | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for key, by in summary.items():
        cells = []
        for label in labels:
            value = by.get(label, float("nan"))
            base = by.get(first, float("nan"))
            ratio = f" ({value / base:.2f})" if label != first and base else ""
            cells.append(f"{value:,.3g}{ratio}")
        print(f"| {key} | " + " | ".join(cells) + " |")
    return summary


if __name__ == "__main__":
    main()
