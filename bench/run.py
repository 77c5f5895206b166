"""Every benchmark in one run: ``python -m bench [--quick] [--runs R] [--out DIR]``.

The daemon, Tansu and the ceiling server are measured in the same run with the same load
generator; servers are interleaved within each run (rotating order) so drift in machine
load hits all of them. Medians over runs. Writes ``bench.json``, ``bench.md`` and PNG charts
to ``--out`` (default ``bench/results/``); ``--quick`` is a tiny run that proves every
scenario works (nothing is written unless ``--out`` is given).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import (
    analytics,
    analytics_small,
    cluster,
    codec,
    console,
    console_live,
    console_slow_http,
    durable,
    heartbeat,
    load,
    rebalance,
    regex_attack,
    report,
    scale,
    servers,
    slow_clients,
    time_to_stable,
)

RESULTS = Path(__file__).parent / "results"


@dataclass(frozen=True)
class Plan:
    runs: int
    hb_seconds: float
    hb_warmup_s: float
    rebalance_sizes: tuple[int, ...]
    rebalance_session_ms: int
    tansu_rebalance_limit_s: float
    scale_groups: int
    scale_per_group: int
    scale_connections: int
    scale_seconds: float
    codec_number: int
    codec_repeats: int
    durable_args: tuple[str, ...]
    #: From handing a load to the (already started) generator processes to its start.
    lead_s: float
    scale_interval_s: float


FULL = Plan(
    runs=3,
    hb_seconds=5.0,
    hb_warmup_s=0.5,
    rebalance_sizes=(10, 100, 1000, 5000),
    rebalance_session_ms=6000,
    tansu_rebalance_limit_s=30.0,
    scale_groups=10_000,
    scale_per_group=10,
    scale_connections=100,
    scale_seconds=15.0,
    codec_number=5000,
    codec_repeats=7,
    durable_args=(),
    lead_s=2.0,
    scale_interval_s=3.0,
)
QUICK = Plan(
    runs=1,
    hb_seconds=0.3,
    hb_warmup_s=0.1,
    rebalance_sizes=(5,),
    rebalance_session_ms=6000,
    tansu_rebalance_limit_s=10.0,
    scale_groups=20,
    scale_per_group=5,
    scale_connections=4,
    scale_seconds=1.0,
    codec_number=20,
    codec_repeats=1,
    durable_args=("--quick", "--no-write"),
    lead_s=1.0,
    scale_interval_s=0.5,
)


def _median(rows: list[dict[str, Any]], key: str) -> float:
    values = [float(r[key]) for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def run_heartbeat(plan: Plan, pool: ProcessPoolExecutor, names: list[str]) -> dict[str, Any]:
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in range(plan.runs):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            server = servers.start(name)
            if server is None:
                continue
            with server:
                measured = heartbeat.measure_server(
                    server, pool, plan.hb_seconds, plan.hb_warmup_s, plan.lead_s
                )
            for scenario, row in measured.items():
                raw.setdefault(scenario, {}).setdefault(name, []).append(row)
            print(f"heartbeat run {r + 1}/{plan.runs} {name}: done", flush=True)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for scenario, by_server in raw.items():
        summary[scenario] = {
            name: {
                key: _median(rows, key)
                for key in (
                    "rate_per_s",
                    "p50_ms",
                    "p99_ms",
                    "server_cpu_cores",
                    "generator_cpu_cores",
                    "connections",
                    "depth",
                    "generator_processes",
                )
            }
            for name, rows in by_server.items()
        }
        for name, rows in by_server.items():
            summary[scenario][name]["error_responses"] = sum(
                sum(r["errors"].values()) for r in rows
            )
            summary[scenario][name]["runs"] = len(rows)
    return {"runs": raw, "summary": summary}


def run_rebalance(plan: Plan, pool: ProcessPoolExecutor, names: list[str]) -> dict[str, Any]:
    raw: dict[str, list[dict[str, Any]]] = {}
    given_up: dict[str, int] = {}  # server -> smallest size that did not converge in time
    for r in range(plan.runs):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            server = servers.start(name)
            if server is None:
                continue
            limit = plan.tansu_rebalance_limit_s if name == "tansu" else 120.0
            with server:
                for n in plan.rebalance_sizes:
                    if n >= given_up.get(name, n + 1):
                        continue
                    for mode in rebalance.MODES:
                        fut = pool.submit(
                            rebalance.run_one,
                            server.port,
                            server.pid,
                            n,
                            mode,
                            plan.rebalance_session_ms,
                            limit,
                        )
                        row = fut.result()
                        row["run"] = r
                        raw.setdefault(name, []).append(row)
                        print(f"rebalance {name} {mode} {n}: {row}", flush=True)
                        if "failed" in row:
                            given_up[name] = min(given_up.get(name, n), n)
                            break
    summary: dict[str, list[dict[str, Any]]] = {}
    for name, rows in raw.items():
        out = []
        for n in plan.rebalance_sizes:
            for mode in rebalance.MODES:
                mine = [x for x in rows if x["members"] == n and x["mode"] == mode]
                if not mine:
                    continue
                ok = [x for x in mine if "failed" not in x]
                entry: dict[str, Any] = {"members": n, "mode": mode, "runs": len(mine)}
                if ok:
                    entry["seconds"] = _median(ok, "seconds")
                    entry["server_cpu_s"] = _median(ok, "server_cpu_s")
                    entry["generator_cpu_s"] = _median(ok, "generator_cpu_s")
                    entry["server_cpu_us_per_member"] = 1e6 * entry["server_cpu_s"] / n
                if len(ok) < len(mine):
                    entry["failed"] = next(x["failed"] for x in mine if "failed" in x)
                out.append(entry)
        summary[name] = out
    return {"runs": raw, "summary": summary, "given_up": given_up}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny run that proves it works")
    parser.add_argument("--runs", type=int, help="runs per measurement (medians over them)")
    parser.add_argument("--out", type=Path, help="results directory (default bench/results)")
    parser.add_argument("--no-tansu", action="store_true", help="leave Tansu out")
    parser.add_argument(
        "--only",
        default=(
            "heartbeat,rebalance,scale,codec,durable,time_to_stable,slow_clients,regex_attack,"
            "cluster,console,"
            "console_slow_http,console_live,analytics,analytics_small"
        ),
        help="comma-separated parts to run",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.runs:
        plan = Plan(**{**plan.__dict__, "runs": args.runs})
    out = args.out if args.out is not None else (None if args.quick else RESULTS)
    parts = set(args.only.split(","))
    names = ["daemon", "tansu", "ceiling"]
    tansu_bin = servers.tansu_binary()
    if args.no_tansu or tansu_bin is None:
        names.remove("tansu")
    started = time.monotonic()
    result: dict[str, Any] = {
        "meta": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "plan": plan.__dict__,
            "tansu": servers.tansu_version(tansu_bin) if "tansu" in names and tansu_bin else None,
            "quick": args.quick,
        }
    }
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        if parts & {"heartbeat", "scale"}:
            load.warm_up(pool)
        if "heartbeat" in parts:
            result["heartbeat"] = run_heartbeat(plan, pool, names)
        if "rebalance" in parts:
            result["rebalance"] = run_rebalance(plan, pool, [n for n in names if n != "ceiling"])
        if "scale" in parts:
            with servers.start_daemon() as daemon:
                result["scale"] = scale.measure(
                    daemon,
                    pool,
                    groups_n=plan.scale_groups,
                    per_group=plan.scale_per_group,
                    interval_s=plan.scale_interval_s,
                    heartbeat_connections=plan.scale_connections,
                    seconds=plan.scale_seconds,
                    lead_s=plan.lead_s,
                )
            print(f"scale: {result['scale']}", flush=True)
    if "codec" in parts:
        result["codec"] = codec.run(plan.codec_number, plan.codec_repeats)
    if "durable" in parts:
        result["durable"] = durable.main(list(plan.durable_args))
    # These two write their own results files (and nothing in --quick).
    quick = ["--quick"] if args.quick else []
    if "time_to_stable" in parts:
        result["time_to_stable"] = time_to_stable.main(quick)
    if "slow_clients" in parts:
        result["slow_clients"] = slow_clients.main(quick)
    if "regex_attack" in parts:
        result["regex_attack"] = regex_attack.main(quick)
    if "cluster" in parts:
        result["cluster"] = cluster.main(quick + (["--no-write"] if args.quick else []))
    if "console" in parts:
        result["console"] = console.main(quick + (["--no-write"] if args.quick else []))
    # Hostile HTTP clients and many live pages (issue 32); they write their own results.
    if "console_slow_http" in parts:
        result["console_slow_http"] = console_slow_http.main(quick)
    if "console_live" in parts:
        result["console_live"] = console_live.main(quick)
    if "analytics" in parts:
        # 10M journal entries of 3 nodes on local[*] with Spark's defaults (a few minutes).
        events = ["--quick", "--no-write"] if args.quick else ["--events", "10000000"]
        result["analytics"] = analytics.main(events)
    if "analytics_small" in parts and not args.quick:  # whole JVMs: not in a quick run
        result["analytics_small"] = analytics_small.main([])
    result["meta"]["wall_s"] = time.monotonic() - started
    if out is not None:
        report.write(result, out)
    print(report.markdown(result))
    return result
