"""``analyze`` of a small journal, as a user runs it: the whole command, wall time.

    python -m bench.analytics_small [--events 1000] [--runs 3] [--variants now,before]
        [--no-write]

A new user's first ``analyze`` reads a journal of a few hundred or thousand entries; it took
minutes with Spark's defaults. This generates a journal of ``--events`` entries (the
generator of ``bench.analytics``), then runs ``group-coordinator analyze`` on it, each run
its own process with its own JVM (as the user's), taking turns between:

- ``now``: the command as it is (its settings for a job of this size, ``analysis_settings``,
  and its class archive: the runs are a user's second and later ones, after a first run,
  timed apart, has had the archive written);
- ``before``: the same command given back, with ``--conf``, the settings it had before
  issue 33's last round: whole-stage and expression code generation, the formatted plan
  text, a driver JVM without the class archive (the baseline measured in the same run);
- ``defaults``: the same command given Spark's defaults back with ``--conf`` (web UI and
  progress bars on, 200 shuffle partitions, the JVM's default compilers and collector);
- ``staged``: the command with ``--staged-tables``: each table written and read back
  before the next, as a large journal's are.

Reports medians over ``--runs`` and their ratio, the terminal lines each printed, and the
machine's load (it is shared). Writes ``bench/results/analytics_small.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .analytics import generate

RESULTS = Path(__file__).parent / "results"
#: Spark's own defaults, which ``analyze`` ran with before it sized its settings.
SPARK_DEFAULTS = {
    "spark.ui.enabled": "true",
    "spark.ui.showConsoleProgress": "true",
    "spark.sql.shuffle.partitions": "200",
    "spark.driver.extraJavaOptions": "",
}
GOAL_S = 30.0


#: What the command ran with before its small jobs were evaluated rather than compiled and
#: its JVM mapped the class archive.
BEFORE = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
    "spark.sql.ui.explainMode": "formatted",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def _confs(settings: dict[str, str]) -> list[str]:
    return [a for k, v in settings.items() for a in ("--conf", f"{k}={v}")]


#: The command's extra arguments in each variant.
VARIANTS: dict[str, list[str]] = {
    "now": [],
    "before": _confs(BEFORE),
    "defaults": _confs(SPARK_DEFAULTS),
    "staged": ["--staged-tables"],
}
#: How long the first run's JVM may take to write the class archive once it has printed.
ARCHIVE_WAIT_S = 600.0


def analyze_once(
    journals: Path, out: Path, extra: list[str], env: dict[str, str]
) -> tuple[float, int]:
    """Seconds of the whole command (JVM start included) and the terminal lines it printed."""
    args = [
        sys.executable,
        "-m",
        "coordinator.commands.cli",
        "analyze",
        str(journals),
        "--out",
        str(out),
    ]
    args += extra
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800, env=env)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"analyze failed: {done.stdout}{done.stderr}")
    # A progress bar redraws itself with carriage returns: each redraw is a line seen.
    printed = (done.stdout + done.stderr).replace("\r", "\n")
    return took, len([line for line in printed.splitlines() if line.strip()])


def run(events: int, runs: int, workdir: Path, names: list[str]) -> dict[str, Any]:
    journals = workdir / "journals"
    journals.mkdir(parents=True)
    truth = generate(journals, events, max(events // 30, 1), 1)
    variants = {name: VARIANTS[name] for name in names}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    lines: dict[str, list[int]] = {name: [] for name in variants}
    loads: list[float] = []
    # The class archive in a cache of the bench's own: the first run writes it (timed
    # apart: a user's first run), the others map it.
    cache = workdir / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    loads.append(os.getloadavg()[0])
    first, _ = analyze_once(journals, workdir / "out-first", [], env)
    print(f"first run (writes the class archive): {first:.1f} s", flush=True)
    archive_s = _wait_for_archive(cache)
    for i in range(runs):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))
        for name in order:
            loads.append(os.getloadavg()[0])
            out = workdir / f"out-{name}-{i}"
            took, printed = analyze_once(journals, out, variants[name], env)
            seconds[name].append(round(took, 1))
            lines[name].append(printed)
            print(f"{name}: {took:.1f} s, {printed} terminal lines", flush=True)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "events": truth.entries,
        "journal_kib": round(sum(p.stat().st_size for p in journals.iterdir()) / 1024),
        "runs": runs,
        "seconds": seconds,
        "median_s": median,
        # How many times longer each variant took than the command as it is.
        "speedup": {n: round(median[n] / median["now"], 2) for n in names if n != "now"},
        "terminal_lines": lines,
        "first_run_s": round(first, 1),
        "archive_written_after_s": archive_s,
        "goal_s": GOAL_S,
        "load_average_min": round(min(loads), 2),
        "load_average_max": round(max(loads), 2),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _wait_for_archive(cache: Path) -> float | None:
    """Seconds until the first run's JVM, exiting after the command, has written the class
    archive (the next run takes it); None if it did not within ``ARCHIVE_WAIT_S``."""
    from coordinator.analytics import class_archive

    directory = cache / "group-coordinator" / "spark-classes"
    started = time.perf_counter()
    while time.perf_counter() - started < ARCHIVE_WAIT_S:
        if any(class_archive.WRITTEN in log.read_text() for log in directory.glob("*.part.log")):
            return round(time.perf_counter() - started, 1)
        time.sleep(1)
    return None


def write_report(result: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "analytics_small.json").write_text(json.dumps(result, indent=2) + "\n")
    now = result["median_s"]["now"]
    rows = {
        "now": "now (sized to the input: no web UI, no progress bars, 1 shuffle partition, "
        "adaptive execution, a JVM with the client compiler and serial collector mapping the "
        "class archive, queries evaluated without code generation, tables in memory and "
        "written at the end)",
        "before": "before (the same without the class archive, with code generation and the "
        "formatted plan text: given back with `--conf`)",
        "staged": "each table written and read back before the next (`--staged-tables`, "
        "as before for every journal)",
        "defaults": "Spark's defaults (before; given back with `--conf`)",
    }
    md = [
        "# `analyze` of a small journal (the whole command, local[*])",
        "",
        f"Journal: {result['events']:,} entries ({result['journal_kib']} KiB), one node. "
        f"Each run is `group-coordinator analyze JOURNAL --out DIR` in its own process (its "
        f"JVM's start included), {result['runs']} runs each, taking turns. Machine: "
        f"{result['cpus']} CPUs, 1-minute load average {result['load_average_min']}-"
        f"{result['load_average_max']} during the runs (the machine is shared), Python "
        f"{result['python']}.",
        "",
        "| settings | median s | runs s | terminal lines |",
        "|---|---:|---|---|",
        *(
            f"| {rows[n]} | {result['median_s'][n]} | {result['seconds'][n]} | "
            f"{result['terminal_lines'][n]} |"
            for n in result["seconds"]
        ),
        "",
        f"A first run (the user's first: its JVM writes the class archive as it exits) took "
        f"{result['first_run_s']} s until its output closed, the JVM's writing of the archive "
        "included (a terminal gets its prompt back when the command has printed; the JVM "
        "holds the output open until it has written the archive).",
        "",
        *(
            f"{ratio}x the time of `now` with {name}, measured in the same run."
            for name, ratio in result["speedup"].items()
        ),
        f"Goal: under {result['goal_s']:.0f} s on this machine "
        f"({'met' if now < result['goal_s'] else 'not met'} at this load).",
        "",
    ]
    (RESULTS / "analytics_small.md").write_text("\n".join(md))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default="now,before", help="of " + ",".join(VARIANTS))
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="analytics-small-") as tmp:
        names = ["now", *(n for n in args.variants.split(",") if n != "now")]
        result = run(args.events, args.runs, Path(tmp), names)
    if not args.no_write:
        write_report(result)
    print(json.dumps({k: result[k] for k in ("median_s", "speedup", "terminal_lines")}))
    return result


if __name__ == "__main__":
    main()
