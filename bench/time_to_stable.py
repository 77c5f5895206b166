"""Time to stable: three fresh consumers of each client library (kafka-python, aiokafka,
confluent-kafka) against a daemon with ``group.initial.rebalance.delay.ms=0``, from the
moment the consumers are created until each owns two of the topic's six partitions.

    python -m bench.time_to_stable [--quick] [--runs R]

Reports the median and max over ``--runs`` fresh groups per library. This includes each
library's own start-up (bootstrap, metadata, FindCoordinator). Writes
``bench/results/time_to_stable.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from tests.integration.clients import LIBRARIES, Member
from tests.integration.conftest import wait_until

from .servers import start_daemon

RESULTS = Path(__file__).parent / "results"
TOPIC = "t6"
TARGET_S = 1.0  # the daemon issue's goal for 3 fresh consumers


def _stable(members: list[Member]) -> bool:
    owned = [m.assigned for m in members]
    return all(len(o) == 2 for o in owned) and len(set().union(*owned)) == 6


def one_run(bootstrap: str, library: str, group: str) -> float:
    start = time.perf_counter()
    members = [
        LIBRARIES[library](bootstrap, group, TOPIC, client_id=f"{library}-{i}") for i in range(3)
    ]
    try:
        if not wait_until(lambda: _stable(members), 30, interval=0.01):
            raise RuntimeError(f"{library}: group {group} did not become stable in 30 s")
        return time.perf_counter() - start
    finally:
        for m in members:
            m.close()


def measure(runs: int) -> dict[str, list[float]]:
    args = ("--store", "memory", "--topic", f"{TOPIC}:6", "--group-initial-rebalance-delay-ms", "0")
    with start_daemon(args=args) as daemon:
        bootstrap = f"127.0.0.1:{daemon.port}"
        # Libraries interleaved run by run, so machine noise hits them alike.
        times: dict[str, list[float]] = {lib: [] for lib in sorted(LIBRARIES)}
        for run in range(runs):
            for lib in times:
                times[lib].append(one_run(bootstrap, lib, f"tts-{lib}-{run}"))
        return times


def write_report(times: dict[str, list[float]], runs: int) -> None:
    rows = [
        {
            "library": lib,
            "runs": runs,
            "median_s": statistics.median(ts),
            "max_s": max(ts),
            "target_s": TARGET_S,
            "met": statistics.median(ts) < TARGET_S,
            "all_s": ts,
        }
        for lib, ts in times.items()
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "time_to_stable.json").write_text(
        json.dumps({"machine": platform.platform(), "rows": rows}, indent=2) + "\n"
    )
    lines = [
        "# Time to stable: 3 fresh consumers, initial rebalance delay 0",
        "",
        f"Median of {runs} fresh groups per library; includes each client's own start-up.",
        "",
        "| library | median s | max s | under 1 s |",
        "|---|---:|---:|---|",
        *(
            f"| {r['library']} | {r['median_s']:.2f} | {r['max_s']:.2f} | "
            f"{'yes' if r['met'] else 'no'} |"
            for r in rows
        ),
    ]
    (RESULTS / "time_to_stable.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run, nothing written")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    times = measure(runs)
    if not args.quick:
        write_report(times, runs)
    for lib, ts in times.items():
        print(f"{lib:>16}: median {statistics.median(ts):.2f} s, max {max(ts):.2f} s")
    return times


if __name__ == "__main__":
    main()
