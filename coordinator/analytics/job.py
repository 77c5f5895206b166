"""The Spark job: journal entries in, per-group, per-member and cluster-wide tables out.

Every table is computed from the staged entries (``ingest``: pruned columns in Parquet,
one partition per journal file) with Spark SQL functions only (no Python UDFs), so the
work stays in the JVM and scales with the master. Entries are ordered by
(``ts_ms``, ``node``, ``seq``) wherever order matters. Tables go to ``OUT/tables/<name>``;
the big ones (one row per rebalance, session, generation...) are partitioned by ``date``
and ``node``. docs/observability.md describes every table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import ingest, storms, story
from . import sessions as sessions_table
from .summary import group_summary
from .together import together

#: Tables the job writes, in the order the report lists them.
TABLES = (
    "group_summary",
    "top_groups",
    "sessions",
    "client_churn",
    "rebalances",
    "rebalance_triggers",
    "rebalance_reasons",
    "rebalance_durations",
    "member_churn",
    "state_durations",
    "generations",
    "assignment_skew",
    "storms",
    "rebalances_over_time",
    "group_timeline",
)

#: One row per event or per member: partitioned by (date, node) rather than one file.
PARTITIONED = frozenset(
    {"sessions", "rebalances", "rebalance_durations", "generations", "assignment_skew"}
)

ORDER = ("ts_ms", "node", "seq")

#: Candidate bin widths of the charts over time (seconds); the first giving few enough bins.
BIN_WIDTHS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
MAX_BINS = 150

#: Groups drawn in the per-group timeline chart.
TIMELINE_GROUPS = 6


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    storm_threshold: int = 5  # this many rebalances of one group...
    storm_window_s: int = 60  # ...starting within this many seconds make a storm
    top_groups: int = 20  # groups shown in the report and chart
    incremental: bool = True  # parse only journal files new or changed since the last run
    # A small journal: tables kept in memory as computed and written together at the end,
    # rather than each written and read back before the next (a dozen Spark jobs apiece).
    in_memory: bool = False

    @property
    def storm_gap_ms(self) -> int:
        """A burst ends where a group goes this long without a rebalance: the pace a storm
        has on average (window / threshold), so a lone rebalance later does not extend it."""
        return self.storm_window_s * 1000 // self.storm_threshold


@dataclass(slots=True)
class Analysis:
    """What the charts and report need, collected to the driver (small by construction)."""

    totals: dict[str, Any]
    top_groups: list[dict[str, Any]]
    storms: list[dict[str, Any]]
    bin_seconds: int
    over_time: list[tuple[str, str, int]]  # (bin start ISO, trigger, rebalances), sparse
    duration_histogram: list[tuple[float, int]]  # (bucket lower bound in s, rebalances)
    triggers: list[tuple[str, int]]  # cluster-wide, most frequent first
    timelines: dict[str, list[dict[str, Any]]]  # group: [{at, state, members}] in order
    tables: dict[str, str] = field(default_factory=dict)  # name: path or URI
    files_parsed: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # seconds: parse, tables


def run(spark: Any, paths: list[str], out: str, options: AnalysisOptions) -> Analysis:
    """Read ``paths``, write the tables under ``out/tables`` (a directory or URI).

    Each table is computed once: the ones others are built from (rebalances, sessions,
    storms...) are read back from their Parquet, never recomputed from the entries; with
    ``options.in_memory`` they are cached instead, and every table is written at the end."""
    from pyspark.sql import functions as F

    phases: dict[str, float] = {}
    clock = time.perf_counter()
    entries, parsed = ingest.ingest(spark, paths, out, options.incremental)
    phases["parse"] = time.perf_counter() - clock
    clock = time.perf_counter()
    entries = entries.withColumn("at", F.timestamp_millis("ts_ms")).withColumn(
        "date", F.to_date("at")
    )
    cached: list[Any] = []
    if options.in_memory:
        entries = entries.cache()
        cached.append(entries)
    span = entries.agg(
        F.count("*").alias("entries"),
        F.countDistinct("node").alias("nodes"),
        F.min("ts_ms").alias("start_ms"),
        F.max("ts_ms").alias("end_ms"),
    ).first()
    end_ms = span["end_ms"] or 0
    written: dict[str, str] = {}
    pending: dict[str, Callable[[], Any]] = {}  # in memory: the writes left for the end

    def save(name: str, frame: Any) -> Any:
        if options.in_memory:
            frame = frame.cache()
            cached.append(frame)
            pending[name] = partial(_write, frame, f"{out}/tables/{name}", name in PARTITIONED)
            return frame
        started = time.perf_counter()
        spark.sparkContext.setJobDescription(f"table {name}")  # names its jobs in Spark's UI
        written[name] = _write(frame, f"{out}/tables/{name}", name in PARTITIONED)
        phases[f"table {name}"] = time.perf_counter() - started
        # With the schema it was written with: an empty table (no classic group, say)
        # has no file to take it from.
        return spark.read.schema(frame.schema).parquet(written[name])

    def saving(frames: dict[str, Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
        return {name: partial(lambda n, f: save(n, f()), name, f) for name, f in frames.items()}

    def write_storms() -> Any:
        # Several aggregates of a storm read its rebalances: sorted into bursts once, and
        # cached while the table is written. (Spark does not coalesce a cached plan's
        # shuffle partitions, 200 by default and most nearly empty: a task per core.)
        in_storm = (
            storms.in_storms(rebalances, options, F)
            .coalesce(spark.sparkContext.defaultParallelism)
            .persist()
        )
        try:
            return save("storms", storms.storms(in_storm, sessions, F))
        finally:
            in_storm.unpersist()

    kind = F.col("type")
    # Tables that do not need each other are written at once (together.py). From the
    # entries:
    t = together(saving({
        "rebalances": lambda: entries.where(kind == "rebalance_started").select(
            "group", "node", "seq", "at", "ts_ms", "date", "generation", "trigger", "reason",
            "reason_member", "client_reason",
        ),
        "sessions": lambda: sessions_table.sessions(entries, F),
        "rebalance_durations": lambda: _durations(entries, F),
        "generations": lambda: entries.where(kind == "join_completed").select(
            "group", "node", "seq", "at", "date", "generation", "members", "leader",
            "duration_ms",
        ),
        "assignment_skew": lambda: _assignment_skew(entries, F),
        "member_churn": lambda: _per_group(entries, F),
        "state_durations": lambda: _state_durations(entries, end_ms, F),
    }))  # fmt: skip
    rebalances, sessions = t["rebalances"], t["sessions"]
    bin_s = _bin_seconds((span["start_ms"] or 0), end_ms)
    bin_ms = bin_s * 1000
    # From those:
    t |= together({"storms": write_storms, **saving({
        "client_churn": lambda: sessions_table.client_churn(sessions, F),
        "rebalance_triggers": lambda: rebalances.groupBy("group", "trigger").count(),
        "rebalance_reasons": lambda: rebalances.groupBy(
            "group", "trigger", "reason", "client_reason"
        ).agg(
            F.count("*").alias("count"),
            F.countDistinct("reason_member").alias("members"),
        ),
        "rebalances_over_time": lambda: rebalances.groupBy(
            F.timestamp_millis(F.floor(F.col("ts_ms") / bin_ms) * bin_ms).alias("bin"), "trigger"
        )
        .agg(F.count("*").alias("rebalances"))
        .withColumn("bin_seconds", F.lit(bin_s)),
    })})  # fmt: skip
    durations, storm_table, triggers, over_time = (
        t["rebalance_durations"], t["storms"], t["rebalance_triggers"], t["rebalances_over_time"]
    )  # fmt: skip

    def summarise() -> tuple[Any, list[dict[str, Any]]]:
        summary = save(
            "group_summary",
            group_summary(
                t["member_churn"], rebalances, durations, sessions, t["client_churn"],
                t["state_durations"], triggers, t["assignment_skew"], storm_table, F,
            ),
        )  # fmt: skip
        # The report's numbers are exactly the tables'. A group that never rebalanced has
        # nothing to say in a ranking by rebalances.
        return summary, [
            r.asDict(recursive=True)
            for r in summary.where(F.col("rebalances") > 0)
            .orderBy(F.desc("rebalances"), "group")
            .limit(options.top_groups)
            .collect()
        ]

    # The summary, and what the report needs from the other tables (small, collected once).
    got = together({
        "summary": summarise,
        "storms": lambda: [
            r.asDict(recursive=True)
            for r in storm_table.orderBy(F.desc("rebalances"), "group", "start")
            .limit(100)
            .collect()
        ],
        "over_time": lambda: [
            (r["bin"].isoformat(), str(r["trigger"]), int(r["rebalances"]))
            for r in over_time.collect()
        ],
        "histogram": lambda: _duration_histogram(durations, F),
        "triggers": lambda: [
            (str(r["trigger"]), int(r["rebalances"]))
            for r in triggers.groupBy("trigger")
            .agg(F.sum("count").alias("rebalances"))
            .orderBy(F.desc("rebalances"), "trigger")
            .collect()
        ],
        "lifetime": lambda: sessions.agg(F.percentile_approx("lifetime_s", 0.5, 10000)).first()[0],
    })  # fmt: skip
    summary, top = got["summary"]
    for rank, group in enumerate(top, 1):
        group["rank"] = rank
        group["story"] = story.sentence(group)
    timeline_groups = [g["group"] for g in top[:TIMELINE_GROUPS] if g["rebalances"]]

    def timeline() -> dict[str, list[dict[str, Any]]]:
        rows = save("group_timeline", _timeline(entries, timeline_groups, F))
        timelines: dict[str, list[dict[str, Any]]] = {g: [] for g in timeline_groups}
        for r in rows.orderBy("group", *ORDER).collect():
            timelines[r["group"]].append(
                {"at": r["at"], "state": r["state"], "members": r["members"]}
            )
        return timelines

    last = together({
        "top_groups": lambda: save("top_groups", _top_frame(spark, top, F)),
        "timelines": timeline,
        "totals": lambda: _totals(summary, span, got["lifetime"], F),
    })  # fmt: skip
    if pending:
        started = time.perf_counter()
        written.update(together(pending))
        phases["table writes"] = time.perf_counter() - started
    for frame in cached:
        frame.unpersist()
    analysis = Analysis(
        totals=last["totals"],
        top_groups=top,
        storms=got["storms"],
        bin_seconds=bin_s,
        over_time=got["over_time"],
        duration_histogram=got["histogram"],
        triggers=got["triggers"],
        timelines=last["timelines"],
        tables={name: written[name] for name in TABLES},
        files_parsed=parsed,
        phases=phases,
    )
    phases["tables"] = time.perf_counter() - clock
    return analysis


def _top_frame(spark: Any, top: list[dict[str, Any]], F: Any) -> Any:
    """The top groups and their sentences as a table, built from literals in the JVM:
    executors need no Python for it."""
    rows = [
        F.struct(
            F.lit(g["rank"]).alias("rank"),
            F.lit(g["group"]).cast("string").alias("group"),
            F.lit(g["rebalances"]).cast("long").alias("rebalances"),
            F.lit(g["story"]).alias("story"),
        )
        for g in top
    ]
    empty = F.struct(
        F.lit(0).alias("rank"),
        F.lit("").alias("group"),
        F.lit(0).cast("long").alias("rebalances"),
        F.lit("").alias("story"),
    )
    return spark.range(1 if rows else 0).select(F.inline(F.array(*(rows or [empty]))))


def _write(frame: Any, path: str, partitioned: bool) -> str:
    if partitioned:
        # Files per day and node, written in parallel, instead of one file for all.
        frame.write.mode("overwrite").partitionBy("date", "node").parquet(path)
    else:
        # One file; repartition rather than coalesce, so the work before it keeps every
        # core (coalesce(1) would run a scan of all the entries in one task).
        frame.repartition(1).write.mode("overwrite").parquet(path)
    return path


def _bin_seconds(start_ms: int, end_ms: int) -> int:
    span_s = max(end_ms - start_ms, 0) / 1000
    for width in BIN_WIDTHS_S:
        if span_s / width <= MAX_BINS:
            return width
    return BIN_WIDTHS_S[-1]


def _durations(entries: Any, F: Any) -> Any:
    """One row per completed rebalance: start until Stable (sync) or Empty (everyone left).
    A KIP-848 group has no join or sync entry: its rebalance runs from the first
    rebalance_started after it was last Stable or Empty until it is again (epoch bumps
    before a target count as one, as one target serves them)."""
    synced = (F.col("type") == "sync_completed") & F.col("rebalance_duration_ms").isNotNull()
    emptied = (F.col("type") == "join_completed") & (F.col("members") == 0)
    classic = entries.where(synced | emptied).select(
        "group", "node", "seq", "at", "date", "generation",
        F.when(synced, F.col("rebalance_duration_ms")).otherwise(F.col("duration_ms")).alias(
            "duration_ms"
        ),
    )  # fmt: skip
    return classic.unionByName(_consumer_group_durations(entries, F))


def _consumer_group_durations(entries: Any, F: Any) -> Any:
    from pyspark.sql import Window

    kind = F.col("type")
    consumer_groups = entries.where(kind == "target_assignment_computed").select("group").distinct()
    ends = (kind == "state_changed") & F.col("to").isin("Stable", "Empty")
    steps = entries.where((kind == "rebalance_started") | ends).join(
        consumer_groups, "group", "left_semi"
    )
    is_end = F.when(ends, 1).otherwise(0)
    so_far = Window.partitionBy("group").orderBy(*ORDER).rowsBetween(Window.unboundedPreceding, 0)
    # The end row belongs to the rebalance it ends: ends before it, not counting itself.
    segments = steps.withColumn("segment", F.sum(is_end).over(so_far) - is_end)
    started = kind == "rebalance_started"
    spans = segments.groupBy("group", "segment").agg(
        F.min(F.when(started, F.col("ts_ms"))).alias("start_ms"),
        F.max(F.when(started, F.col("generation"))).alias("from_generation"),
        F.max_by(
            F.struct("node", "seq", "at", "date", "ts_ms"), F.when(ends, F.col("ts_ms"))
        ).alias("end"),
    )
    return spans.where(F.col("start_ms").isNotNull() & F.col("end").isNotNull()).select(
        "group", "end.node", "end.seq", "end.at", "end.date",
        (F.col("from_generation") + 1).cast("int").alias("generation"),
        (F.col("end.ts_ms") - F.col("start_ms")).alias("duration_ms"),
    )  # fmt: skip


def _per_group(entries: Any, F: Any) -> Any:
    """What one pass over the entries tells per group: when, where, and member churn.

    The pass over every entry uses only aggregates Spark keeps in a hash map (counts, sums,
    min, max), per group and node; the set of nodes comes from those few rows, and the
    reconcile-time median from the member_reconciled entries alone. (A percentile or a
    set over all the entries makes Spark sort them all: several times the cost.)"""
    kind = F.col("type")
    reconciled = kind == "member_reconciled"
    churn = {
        "members_joined": kind == "member_joined",
        "members_left": kind == "member_left",
        "members_expired": kind == "member_expired",
        "session_expiries": (kind == "member_expired")
        & (F.col("removal_reason") == "session_timeout"),
        "members_evicted": kind == "member_evicted",
        "static_members_replaced": kind == "static_member_replaced",
        "deletions": kind == "group_deleted",
    }
    # KIP-848 consumer groups: target assignments, and members' time to reconcile.
    kip848 = {"target_assignments": kind == "target_assignment_computed",
              "reconciliations": reconciled}  # fmt: skip
    counts = {**churn, **kip848}
    ours = entries.where(F.col("group").isNotNull())
    per_node = ours.groupBy("group", "node").agg(
        F.min("at").alias("first_seen"),
        F.max("at").alias("last_seen"),
        F.max(F.when(kind == "join_completed", F.col("generation"))).alias("last_generation"),
        *(F.count(F.when(when, 1)).alias(name) for name, when in counts.items()),
        F.sum(F.when(kind == "offsets_committed", F.col("count"))).alias("offsets_committed"),
        F.max(F.when(reconciled, F.col("duration_ms"))).alias("reconcile_max_ms"),
    )
    per_group = per_node.groupBy("group").agg(
        F.min("first_seen").alias("first_seen"),
        F.max("last_seen").alias("last_seen"),
        F.array_sort(F.collect_set("node")).alias("nodes"),
        F.max("last_generation").alias("last_generation"),
        *(F.sum(name).alias(name) for name in counts),
        F.coalesce(F.sum("offsets_committed"), F.lit(0)).alias("offsets_committed"),
        F.max("reconcile_max_ms").alias("reconcile_max_ms"),
    )
    reconcile_p50 = (
        ours.where(reconciled)
        .groupBy("group")
        .agg(F.percentile_approx("duration_ms", F.lit(0.5)).alias("reconcile_p50_ms"))
    )
    return per_group.join(reconcile_p50, "group", "left").select(
        "group", "first_seen", "last_seen", "nodes", "last_generation", *churn,
        "offsets_committed", *kip848, "reconcile_p50_ms", "reconcile_max_ms",
    )  # fmt: skip


def _state_durations(entries: Any, end_ms: int, F: Any) -> Any:
    """Seconds each group spent in each state: from each change to the next (or to the end
    of the journals). Dead is where a group ends, not a state it spends time in; a group
    moved to another node goes Dead on the old one and on with the new one's entries."""
    from pyspark.sql import Window

    by_group = Window.partitionBy("group").orderBy(*ORDER)
    changes = _state_changes(entries, F).select("group", *ORDER, "state")
    spans = changes.withColumn(
        "until_ms", F.coalesce(F.lead("ts_ms").over(by_group), F.lit(end_ms))
    ).where(F.col("state") != "Dead")
    return spans.groupBy("group", "state").agg(
        (F.sum(F.col("until_ms") - F.col("ts_ms")) / 1000).alias("seconds")
    )


def _state_changes(entries: Any, F: Any) -> Any:
    """State changes, and the state a group was loaded or reverted in (a node taking it
    over, a restart, a failed write): those have no state_changed entry of their own."""
    kind = F.col("type")
    state = F.when(kind == "state_changed", F.col("to")).otherwise(F.col("state"))
    return entries.where(
        kind.isin("state_changed", "group_loaded", "group_reverted") & state.isNotNull()
    ).withColumn("state", state)


def _assignment_skew(entries: Any, F: Any) -> Any:
    """Partitions per member at every SyncGroup of a group; skew is max/min."""
    return entries.where(
        (F.col("type") == "sync_completed") & (F.col("assigned_members") > 0)
    ).select(
        "group", "node", "seq", "at", "date", "generation",
        F.col("assigned_members").alias("members"),
        "max_partitions", "min_partitions", "assignment_bytes",
        F.when(
            F.col("min_partitions") > 0, F.col("max_partitions") / F.col("min_partitions")
        ).alias("skew"),
    )  # fmt: skip


def _timeline(entries: Any, groups: list[str], F: Any) -> Any:
    """States and member counts of ``groups`` over time (a row per change). A classic
    group's size is known at each join, a KIP-848 group's at each target assignment."""
    kind = F.col("type")
    ours = entries.where(F.col("group").isin(groups))
    states = _state_changes(ours, F).select(
        "group", *ORDER, "at", "state", F.lit(None).cast("int").alias("members")
    )
    sizes = ours.where(kind.isin("join_completed", "target_assignment_computed")).select(
        "group", *ORDER, "at", F.lit(None).cast("string").alias("state"), "members"
    )
    return states.unionByName(sizes)


def _totals(summary: Any, span: Any, lifetime: Any, F: Any) -> dict[str, Any]:
    row = summary.agg(
        F.count("*").alias("groups"),
        F.sum("rebalances").alias("rebalances"),
        F.sum("members_joined").alias("members_joined"),
        F.sum("members_left").alias("members_left"),
        F.sum("members_expired").alias("members_expired"),
        F.sum("session_expiries").alias("session_expiries"),
        F.sum("members_evicted").alias("members_evicted"),
        F.sum("static_members_replaced").alias("static_members_replaced"),
        F.sum("storms").alias("storms"),
    ).first()
    totals = {k: (v or 0) for k, v in row.asDict().items()}
    totals.update(
        entries=span["entries"],
        nodes=span["nodes"],
        start=_iso(span["start_ms"]),
        end=_iso(span["end_ms"]),
        member_lifetime_p50_s=lifetime,
    )
    return totals


def _iso(ms: int | None) -> str | None:
    from datetime import UTC, datetime

    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _duration_histogram(durations: Any, F: Any) -> list[tuple[float, int]]:
    """Rebalance durations in power-of-two millisecond buckets, counted in Spark."""
    bucket = F.when(F.col("duration_ms") < 1, F.lit(0)).otherwise(
        F.floor(F.log2(F.col("duration_ms"))) + 1
    )
    rows = durations.groupBy(bucket.alias("b")).count().orderBy("b").collect()
    return [((0.0 if r["b"] == 0 else 2 ** (r["b"] - 1) / 1000), int(r["count"])) for r in rows]
