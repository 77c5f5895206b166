"""Rebalance analytics on Spark: a synthetic journal, analysed on ``local[*]``, timed.

    python -m bench.analytics [--events N] [--groups G] [--nodes K] [--quick] [--no-write]

Generates ``--events`` journal entries (default 1,000,000) for ``--groups`` groups owned by
``--nodes`` nodes (one journal file each), the way the daemon writes them: members join,
leave and expire, leaders rejoin, offsets are committed, and every rebalance goes through
PreparingRebalance, CompletingRebalance and Stable with its join and sync entries. Then
runs ``group-coordinator analyze`` on it, in this process, and times the Spark job (Spark
start-up is reported apart). Writes ``bench/results/analytics.json`` and ``.md``.

The generator keeps the truth (rebalances, joins, leaves, expiries, commits per group), and
the run fails if the analysis disagrees with it.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import platform
import random
import resource
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.analytics.job import AnalysisOptions

RESULTS = Path(__file__).parent / "results"
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TOPIC_PARTITIONS = 12
STORM_LENGTH = 10


@dataclass
class Truth:
    """What the generated journal contains, per group."""

    rebalances: Counter[str] = field(default_factory=Counter)
    joined: Counter[str] = field(default_factory=Counter)
    left: Counter[str] = field(default_factory=Counter)
    expired: Counter[str] = field(default_factory=Counter)
    evicted: Counter[str] = field(default_factory=Counter)
    static_replaced: Counter[str] = field(default_factory=Counter)
    deleted: Counter[str] = field(default_factory=Counter)
    committed: Counter[str] = field(default_factory=Counter)
    nodes: dict[str, set[int]] = field(default_factory=dict)
    rebalance_times: dict[str, list[int]] = field(default_factory=dict)
    state_changes: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)  # sessions by how they ended
    entries: int = 0
    end_ms: int = 0

    def storms(self, threshold: int, window_s: int) -> int:
        """Storms as ``analyze`` defines them, counted in plain Python: bursts of rebalances
        at most window/threshold apart in which some window holds ``threshold``."""
        window_ms, gap_ms, count = window_s * 1000, window_s * 1000 // threshold, 0
        for times in self.rebalance_times.values():
            bursts: list[list[int]] = []
            for t in sorted(times):
                if bursts and t - bursts[-1][-1] <= gap_ms:
                    bursts[-1].append(t)
                else:
                    bursts.append([t])
            for burst in bursts:
                if any(
                    bisect.bisect_left(burst, t + window_ms) - i >= threshold
                    for i, t in enumerate(burst)
                ):
                    count += 1
        return count

    def seconds_in_state(self, group: str) -> dict[str, float]:
        """From each state change to the next (or the end of the journals); not Dead."""
        out: Counter[str] = Counter()
        changes = self.state_changes.get(group, [])
        for (t, state), nxt in zip(changes, [*changes[1:], (self.end_ms, "")], strict=True):
            if state != "Dead":
                out[state] += nxt[0] - t
        return {k: v / 1000 for k, v in out.items()}


class _Member:
    __slots__ = ("client_host", "client_id", "instance", "member")

    def __init__(self, member: str, client_id: str, host: str, instance: str | None) -> None:
        self.member, self.client_id, self.client_host = member, client_id, host
        self.instance = instance


class _Group:
    __slots__ = ("generation", "members", "name", "next_member", "node", "state")

    def __init__(self, name: str, node: int) -> None:
        self.name = name
        self.node = node
        self.generation = 0
        self.members: list[_Member] = []
        self.next_member = 0
        self.state = "Empty"


class _Writer:
    def __init__(self, directory: Path, nodes: int, truth: Truth) -> None:
        self.files = [open(directory / f"journal-node{n}.jsonl", "w") for n in range(nodes)]  # noqa: SIM115
        self.seq = [0] * nodes
        self.truth = truth

    def line(self, g: _Group, ts_ms: int, body: dict[str, Any]) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts_ms // 1000))
        ts = f"{stamp}.{ts_ms % 1000:03d}Z"
        entry = {"v": 1, "ts": ts, "ts_ms": ts_ms, "node": g.node, "seq": self.seq[g.node],
                 "group": g.name, **body}  # fmt: skip
        self.seq[g.node] += 1
        self.files[g.node].write(json.dumps(entry, separators=(",", ":")) + "\n")
        self.truth.entries += 1
        self.truth.end_ms = max(self.truth.end_ms, ts_ms)
        self.truth.nodes.setdefault(g.name, set()).add(g.node)
        if body["type"] == "state_changed":
            g.state = body["to"]
            self.truth.state_changes.setdefault(g.name, []).append((ts_ms, body["to"]))
        elif body["type"] == "group_loaded":
            g.state = body["state"]
            self.truth.state_changes.setdefault(g.name, []).append((ts_ms, body["state"]))

    def state(self, g: _Group, ts_ms: int, to: str) -> None:
        self.line(g, ts_ms, {"type": "state_changed", "from": g.state, "to": to})

    def close(self) -> None:
        for f in self.files:
            f.close()


def generate(directory: Path, events: int, groups: int, nodes: int, seed: int = 7) -> Truth:
    """Write about ``events`` entries (never fewer) and return what they contain: members
    join (some static), leave, expire, restart (static) and are evicted; leaders rejoin,
    sometimes in a storm; groups move between nodes (Dead on one, loaded on the other) and
    are deleted once everyone has left; offsets are committed."""
    rng = random.Random(seed)
    truth = Truth()
    out = _Writer(directory, nodes, truth)
    gs = [_Group(f"group-{i:05d}", i % nodes) for i in range(groups)]
    now = T0_MS
    try:
        while truth.entries < events:
            now += rng.randint(1, 40)
            g = rng.choice(gs)
            roll = rng.random()
            if not g.members or (roll < 0.25 and len(g.members) < 8):
                m = _new_member(g, rng)
                out.line(g, now, _joined(m))
                truth.joined[g.name] += 1
                g.members.append(m)
                reason = f"adding new member {m.member}"
                now = _rebalance(out, rng, g, now, "new_member", reason)
            elif roll < 0.35:
                m = g.members.pop(rng.randrange(len(g.members)))
                out.line(g, now, {"type": "member_left", "member": m.member,
                                  "instance": m.instance, "reason": "closing"})  # fmt: skip
                truth.left[g.name] += 1
                truth.outcomes["left"] += 1
                now = _rebalance(out, rng, g, now, "member_left", f"LeaveGroup for ({m.member})")
            elif roll < 0.42:
                m = g.members.pop(rng.randrange(len(g.members)))
                out.line(g, now, {"type": "member_expired", "member": m.member,
                                  "instance": m.instance, "timer": "session_timeout"})  # fmt: skip
                truth.expired[g.name] += 1
                truth.outcomes["expired"] += 1
                reason = f"member {m.member} expired (session timeout)"
                now = _rebalance(out, rng, g, now, "member_expired", reason)
            elif roll < 0.50:
                reason = f"member {g.members[0].member} rejoined in Stable"
                now = _rebalance(out, rng, g, now, "member_rejoined", reason)
            elif roll < 0.501:
                # A storm: the leader keeps asking for new assignments (metadata flapping).
                for _ in range(STORM_LENGTH):
                    reason = f"member {g.members[0].member} rejoined in Stable"
                    now = _rebalance(out, rng, g, now, "member_rejoined", reason)
            elif roll < 0.503 and any(m.instance for m in g.members):
                # A static member restarts: same instance, new member id.
                i = next(i for i, m in enumerate(g.members) if m.instance)
                old = g.members[i]
                new = _Member(f"{old.client_id}-{g.next_member}", old.client_id,
                              old.client_host, old.instance)  # fmt: skip
                g.next_member += 1
                g.members[i] = new
                out.line(g, now, {"type": "static_member_replaced", "instance": old.instance,
                                  "old_member": old.member, "member": new.member})  # fmt: skip
                truth.static_replaced[g.name] += 1
                truth.outcomes["replaced"] += 1
                reason = f"static member {old.instance} rejoined as {new.member}"
                now = _rebalance(out, rng, g, now, "static_member_replaced", reason)
            elif roll < 0.504 and len(g.members) > 1:
                # Evicted over group.max.size when the group was loaded.
                m = g.members.pop()
                out.line(g, now, {"type": "member_evicted", "member": m.member,
                                  "instance": m.instance, "reason": "group_max_size"})  # fmt: skip
                truth.evicted[g.name] += 1
                truth.outcomes["evicted"] += 1
                now = _rebalance(out, rng, g, now, "loaded", "loaded over group.max.size")
            elif roll < 0.505 and nodes > 1:
                # The group moves to another node: Dead on this one, loaded on the next.
                out.state(g, now, "Dead")
                out.line(g, now, {"type": "group_unloaded", "generation": g.generation,
                                  "members": len(g.members)})  # fmt: skip
                state = "Stable"  # a group moves between rebalances
                g.node = (g.node + 1) % nodes
                now += rng.randint(5, 50)
                out.line(g, now, {"type": "group_loaded", "state": state,
                                  "members": len(g.members), "offsets": 0})  # fmt: skip
            elif roll < 0.506:
                # Everyone leaves, then the group is deleted; it may come back later.
                while g.members:
                    m = g.members.pop()
                    out.line(g, now, {"type": "member_left", "member": m.member,
                                      "instance": m.instance, "reason": "shutdown"})  # fmt: skip
                    truth.left[g.name] += 1
                    truth.outcomes["left"] += 1
                    now = _rebalance(
                        out, rng, g, now, "member_left", f"LeaveGroup for ({m.member})"
                    )
                now += rng.randint(1, 40)
                out.state(g, now, "Dead")
                out.line(g, now, {"type": "group_deleted", "reason": "DeleteGroups"})
                truth.deleted[g.name] += 1
                g.generation = 0
                g.state = "Empty"
            else:
                count = rng.randint(1, TOPIC_PARTITIONS)
                out.line(g, now, {"type": "offsets_committed", "count": count})
                truth.committed[g.name] += count
    finally:
        out.close()
    truth.outcomes["open"] = sum(len(g.members) for g in gs)
    return truth


def _new_member(g: _Group, rng: random.Random) -> _Member:
    k = rng.randrange(4)
    client_id = f"{g.name}-app{k}"
    member = f"{client_id}-{g.next_member}"
    instance = f"{g.name}-static{g.next_member}" if rng.random() < 0.2 else None
    g.next_member += 1
    return _Member(member, client_id, f"/10.0.{g.node}.{k}", instance)


def _joined(m: _Member) -> dict[str, Any]:
    return {"type": "member_joined", "member": m.member, "instance": m.instance,
            "client_id": m.client_id, "client_host": m.client_host,
            "protocols": ["range"]}  # fmt: skip


def _rebalance(
    out: _Writer, rng: random.Random, g: _Group, now: int, trigger: str, reason: str
) -> int:
    out.state(g, now, "PreparingRebalance")
    out.line(g, now, {"type": "rebalance_started", "generation": g.generation,
                      "trigger": trigger, "reason": reason})  # fmt: skip
    out.truth.rebalances[g.name] += 1
    out.truth.rebalance_times.setdefault(g.name, []).append(now)
    join_ms = rng.randint(5, 3000)
    g.generation += 1
    t = now + join_ms
    if not g.members:
        out.state(g, t, "Empty")
        out.line(g, t, {"type": "join_completed", "generation": g.generation, "members": 0,
                        "leader": None, "protocol": None, "duration_ms": join_ms})  # fmt: skip
        return t
    out.state(g, t, "CompletingRebalance")
    out.line(g, t, {"type": "join_completed", "generation": g.generation,
                    "members": len(g.members), "leader": g.members[0].member,
                    "protocol": "range", "duration_ms": join_ms})  # fmt: skip
    sync_ms = rng.randint(1, 200)
    t += sync_ms
    share, extra = divmod(TOPIC_PARTITIONS, len(g.members))
    assignment = {
        m.member: {"bytes": 20 + 4 * (share + (i < extra)), "partitions": share + (i < extra)}
        for i, m in enumerate(g.members)
    }
    out.state(g, t, "Stable")
    out.line(g, t, {"type": "sync_completed", "generation": g.generation, "duration_ms": sync_ms,
                    "rebalance_duration_ms": join_ms + sync_ms,
                    "assignment": assignment})  # fmt: skip
    return t


def check(
    truth: Truth,
    analysis: Any,
    summary_rows: list[dict[str, Any]],
    outcomes: dict[str, int],
    options: AnalysisOptions | None = None,
) -> None:
    """The analysis must find exactly what the generator wrote."""
    options = options or AnalysisOptions()
    if analysis.totals["entries"] != truth.entries:
        raise AssertionError(f"entries {analysis.totals['entries']} != {truth.entries}")
    if analysis.totals["rebalances"] != sum(truth.rebalances.values()):
        raise AssertionError("total rebalances differ")
    storms = truth.storms(options.storm_threshold, options.storm_window_s)
    if analysis.totals["storms"] != storms:
        raise AssertionError(f"storms {analysis.totals['storms']} != {storms}")
    if outcomes != {k: v for k, v in truth.outcomes.items() if v}:
        raise AssertionError(f"sessions by outcome {outcomes} != {dict(truth.outcomes)}")
    for row in summary_rows:
        name = row["group"]
        got = (row["rebalances"], row["members_joined"], row["members_left"],
               row["members_expired"], row["members_evicted"], row["static_members_replaced"],
               row["deletions"], row["offsets_committed"], set(row["nodes"]))  # fmt: skip
        want = (truth.rebalances[name], truth.joined[name], truth.left[name],
                truth.expired[name], truth.evicted[name], truth.static_replaced[name],
                truth.deleted[name], truth.committed[name], truth.nodes[name])  # fmt: skip
        if got != want:
            raise AssertionError(f"{name}: analysis {got} != generated {want}")
        seconds = truth.seconds_in_state(name)
        if set(row["seconds_in_state"] or {}) != set(seconds) or any(
            abs(row["seconds_in_state"][k] - v) > 1e-6 for k, v in seconds.items()
        ):
            raise AssertionError(f"{name}: {row['seconds_in_state']} != generated {seconds}")


def run(
    events: int, groups: int, nodes: int, workdir: Path, rerun: bool = True, sized: bool = False
) -> dict[str, Any]:
    """``sized``: the session gets the settings ``analyze`` would give these journals (a
    quick run's are a small job's), rather than Spark's defaults."""
    from coordinator.analytics.command import (
        analysis_settings,
        analyze_journals,
        spark_session,
        with_class_archive,
    )

    journals = workdir / "journals"
    journals.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    truth = generate(journals, events, groups, nodes)
    generate_s = time.perf_counter() - started
    journal_bytes = sum(p.stat().st_size for p in journals.iterdir())

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    # Unless sized: Spark's defaults, local[*] and its own driver memory (1g).
    settings = with_class_archive(analysis_settings(journal_bytes, {}, None)) if sized else {}
    spark = spark_session(None, settings)
    startup_s = time.perf_counter() - started
    try:
        started = time.perf_counter()
        out = workdir / "out"
        analysis, report = analyze_journals(spark, [str(journals)], out, out, AnalysisOptions())
        analyze_s = time.perf_counter() - started
        summary = [
            r.asDict(recursive=True)
            for r in spark.read.parquet(analysis.tables["group_summary"]).collect()
        ]
        sessions = spark.read.parquet(analysis.tables["sessions"]).groupBy("outcome").count()
        check(truth, analysis, summary, {r["outcome"]: r["count"] for r in sessions.collect()})
        rerun_s = rerun_tables_s = None
        if rerun:
            # A rerun after one more (small) journal file: only that file is parsed.
            (journals / "later").mkdir()
            generate(journals / "later", 10_000, 10, 1, seed=8)
            started = time.perf_counter()
            again, _ = analyze_journals(spark, [str(journals)], out, out, AnalysisOptions())
            rerun_s = time.perf_counter() - started
            rerun_tables_s = round(again.phases["tables"], 1)
            if again.files_parsed != 1:
                raise AssertionError(f"the rerun parsed {again.files_parsed} files, not 1")
        jvm_peak_mb = _peak_rss_mb(spark.sparkContext._gateway.proc.pid)
        return {
            "events": truth.entries,
            "groups": groups,
            "nodes": nodes,
            "journal_mb": round(journal_bytes / 2**20, 1),
            "generate_s": round(generate_s, 1),
            "spark_startup_s": round(startup_s, 1),
            "analyze_s": round(analyze_s, 1),
            "events_per_s": round(truth.entries / analyze_s),
            "rerun_s": None if rerun_s is None else round(rerun_s, 1),
            "parse_s": round(analysis.phases["parse"], 1),
            "tables_s": round(analysis.phases["tables"], 1),
            "charts_report_s": round(analysis.phases["charts"] + analysis.phases["report"], 1),
            "rerun_tables_s": rerun_tables_s,
            # Each table's own time; they overlap, several being written at once.
            "table_s": {
                k.removeprefix("table "): round(v, 1)
                for k, v in analysis.phases.items()
                if k.startswith("table ")
            },
            "rebalances": analysis.totals["rebalances"],
            "storms": analysis.totals["storms"],
            # The machine is shared: a 1-minute load average above its CPU count means the
            # job did not have the cores to itself.
            "load_average_before": round(load_before, 2),
            # Peak resident memory (VmHWM) of the Spark JVM (driver and local executors) and
            # of this Python process (the generator's truth and the collected results).
            "jvm_peak_rss_mb": jvm_peak_mb,
            "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "driver_memory": spark.sparkContext.getConf().get(
                "spark.driver.memory", "1g (default)"
            ),
            "report": str(report),
            "master": spark.sparkContext.master,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        }
    finally:
        spark.stop()


def _peak_rss_mb(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return None


def write_report(result: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    stored = {k: v for k, v in result.items() if k != "report"}
    (RESULTS / "analytics.json").write_text(json.dumps(stored, indent=2) + "\n")
    md = [
        "# Rebalance analytics on Spark (`group-coordinator analyze`, local[*])",
        "",
        f"Synthetic journal: {result['events']:,} entries, {result['groups']:,} groups, "
        f"{result['nodes']} nodes ({result['journal_mb']} MiB of JSON lines), "
        f"{result['rebalances']:,} rebalances, {result['storms']:,} storms. Machine: "
        f"{result['cpus']} CPUs (1-minute load average {result['load_average_before']} "
        f"before the run: the machine is shared), Python {result['python']}.",
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| generate the journal (Python) | {result['generate_s']} |",
        f"| start Spark (JVM) | {result['spark_startup_s']} |",
        f"| analyze: parse, stage, 15 Parquet tables, 4 charts, report | {result['analyze_s']} |",
        f"| of which parsing the JSON lines into the staged Parquet | {result['parse_s']} |",
        f"| of which the tables (several written at once) and what the report collects "
        f"| {result['tables_s']} |",
        f"| of which the charts and report | {result['charts_report_s']} |",
        f"| rerun after one more journal file (10,000 entries): only it is parsed "
        f"| {result['rerun_s']} |",
        f"| of which the tables | {result['rerun_tables_s']} |",
        "",
        f"{result['events_per_s']:,} entries/s analysed, with Spark's defaults (master "
        f"{result['master']}, driver memory {result['driver_memory']}). Peak resident memory: "
        f"Spark JVM {result['jvm_peak_rss_mb']} MiB, Python {result['python_peak_rss_mb']} MiB "
        "(the generator's truth). The analysis was checked against the generator's counts "
        "(rebalances, joins, leaves, expiries, evictions, static replacements, deletions, "
        "commits and nodes per group, time in each state, sessions by outcome, and storms "
        "counted in plain Python).",
        "",
    ]
    (RESULTS / "analytics.md").write_text("\n".join(md))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="tiny run with analyze's settings, to prove it works"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.groups = 1_000, 10
    with tempfile.TemporaryDirectory(prefix="analytics-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        result = run(
            args.events, args.groups, args.nodes, workdir, rerun=not args.quick, sized=args.quick
        )
    if not args.no_write:
        write_report(result)
    print(
        f"{result['events']:,} entries, {result['groups']} groups, {result['nodes']} nodes: "
        f"analyzed in {result['analyze_s']}s (Spark start {result['spark_startup_s']}s)"
    )
    return result


if __name__ == "__main__":
    main()
