"""The Spark job: journal lines in, per-group and cluster-wide rebalance tables out.

Every table is computed from one cached DataFrame of journal entries, with Spark SQL
functions only (no Python UDFs), so the work stays in the JVM and scales with the master.
Tables are written as Parquet under ``OUT/tables/<name>``; see README "Rebalance analytics".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .schema import journal_schema

#: Tables the job writes, in the order the report lists them.
TABLES = (
    "group_summary",
    "rebalances",
    "rebalance_triggers",
    "rebalance_reasons",
    "rebalance_durations",
    "member_churn",
    "state_durations",
    "generations",
    "assignment_skew",
    "storms",
    "rebalances_per_minute",
)


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    storm_threshold: int = 5  # this many rebalances of one group...
    storm_window_s: int = 60  # ...starting within this many seconds make a storm
    top_groups: int = 20  # groups shown in the report and chart


@dataclass(slots=True)
class Analysis:
    """What the charts and report need, collected to the driver (small by construction)."""

    totals: dict[str, Any]
    top_groups: list[dict[str, Any]]
    storms: list[dict[str, Any]]
    per_minute: list[tuple[str, int]]
    duration_histogram: list[tuple[float, int]]  # (bucket lower bound in s, rebalances)
    triggers: list[tuple[str, int]]  # cluster-wide, most frequent first
    tables: dict[str, str] = field(default_factory=dict)  # name: path or URI


def run(spark: Any, paths: list[str], out: str, options: AnalysisOptions) -> Analysis:
    """Read ``paths``, write the tables under ``out/tables`` (a directory or URI)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    entries = (
        spark.read.schema(journal_schema())
        .option("recursiveFileLookup", "true")
        .json(paths)
        .where(F.col("type").isNotNull() & F.col("ts_ms").isNotNull())
        .withColumn("at", F.timestamp_millis("ts_ms"))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    end_ms = entries.agg(F.max("ts_ms")).first()[0] or 0

    rebalances = entries.where(F.col("type") == "rebalance_started").select(
        "group", "node", "at", "ts_ms", "generation", "trigger", "reason"
    )
    durations = _durations(entries, F)
    churn = _member_churn(entries, F)
    states = _state_durations(entries, end_ms, F)
    generations = entries.where(F.col("type") == "join_completed").select(
        "group", "node", "at", "generation", "members", "leader", "protocol", "duration_ms"
    )
    skew = _assignment_skew(entries, F)
    storms = _storms(rebalances, options, F)
    triggers = rebalances.groupBy("group", "trigger").count()
    reasons = rebalances.groupBy("group", "trigger", "reason").count()
    per_minute = (
        rebalances.groupBy(F.date_trunc("minute", "at").alias("minute"))
        .count()
        .withColumnRenamed("count", "rebalances")
        .orderBy("minute")
    )
    summary = _group_summary(
        entries, rebalances, durations, churn, states, triggers, skew, storms, F
    )

    tables = {
        "group_summary": summary,
        "rebalances": rebalances,
        "rebalance_triggers": triggers,
        "rebalance_reasons": reasons,
        "rebalance_durations": durations,
        "member_churn": churn,
        "state_durations": states,
        "generations": generations,
        "assignment_skew": skew,
        "storms": storms,
        "rebalances_per_minute": per_minute,
    }
    written: dict[str, str] = {}
    for name in TABLES:
        path = f"{out}/tables/{name}"
        tables[name].coalesce(1).write.mode("overwrite").parquet(path)
        written[name] = path

    # Read back what was just written: the report's numbers are exactly the tables'.
    summary_out = spark.read.parquet(written["group_summary"]).persist()
    analysis = Analysis(
        totals=_totals(summary_out, entries, F),
        top_groups=[
            r.asDict(recursive=True)
            for r in summary_out.orderBy(F.desc("rebalances"), "group")
            .limit(options.top_groups)
            .collect()
        ],
        storms=[
            r.asDict()
            for r in spark.read.parquet(written["storms"])
            .orderBy(F.desc("rebalances"), "group", "start")
            .limit(100)
            .collect()
        ],
        per_minute=[
            (r["minute"].isoformat(), int(r["rebalances"]))
            for r in spark.read.parquet(written["rebalances_per_minute"])
            .orderBy("minute")
            .collect()
        ],
        duration_histogram=_duration_histogram(durations, F),
        triggers=[
            (str(r["trigger"]), int(r["rebalances"]))
            for r in spark.read.parquet(written["rebalance_triggers"])
            .groupBy("trigger")
            .agg(F.sum("count").alias("rebalances"))
            .orderBy(F.desc("rebalances"), "trigger")
            .collect()
        ],
        tables=written,
    )
    summary_out.unpersist()
    entries.unpersist()
    return analysis


def _durations(entries: Any, F: Any) -> Any:
    """One row per completed rebalance: start until Stable (sync) or Empty (everyone left)."""
    synced = entries.where(
        (F.col("type") == "sync_completed") & F.col("rebalance_duration_ms").isNotNull()
    ).select("group", "at", "generation", F.col("rebalance_duration_ms").alias("duration_ms"))
    emptied = entries.where((F.col("type") == "join_completed") & (F.col("members") == 0)).select(
        "group", "at", "generation", "duration_ms"
    )
    return synced.unionByName(emptied)


def _member_churn(entries: Any, F: Any) -> Any:
    kind = F.col("type")
    return entries.groupBy("group").agg(
        F.count(F.when(kind == "member_joined", 1)).alias("members_joined"),
        F.count(F.when(kind == "member_left", 1)).alias("members_left"),
        F.count(F.when(kind == "member_expired", 1)).alias("members_expired"),
        F.count(
            F.when((kind == "member_expired") & (F.col("timer") == "session_timeout"), 1)
        ).alias("session_expiries"),
        F.count(F.when(kind == "member_evicted", 1)).alias("members_evicted"),
        F.count(F.when(kind == "static_member_replaced", 1)).alias("static_members_replaced"),
        F.coalesce(F.sum(F.when(kind == "offsets_committed", F.col("count"))), F.lit(0)).alias(
            "offsets_committed"
        ),
    )


def _state_durations(entries: Any, end_ms: int, F: Any) -> Any:
    """Seconds each group spent in each state: from each change to the next (or to the end
    of the journal). Dead is where a group ends, not a state it spends time in."""
    from pyspark.sql import Window

    by_group = Window.partitionBy("group").orderBy("ts_ms")
    changes = entries.where(F.col("type") == "state_changed").select(
        "group", "ts_ms", F.col("to").alias("state")
    )
    spans = changes.withColumn(
        "until_ms", F.coalesce(F.lead("ts_ms").over(by_group), F.lit(end_ms))
    ).where(F.col("state") != "Dead")
    return spans.groupBy("group", "state").agg(
        (F.sum(F.col("until_ms") - F.col("ts_ms")) / 1000).alias("seconds")
    )


def _assignment_skew(entries: Any, F: Any) -> Any:
    """Partitions per member at every SyncGroup of a consumer group; skew is max/min."""
    sizes = entries.where(F.col("type") == "sync_completed").select(
        "group", "at", "generation", F.explode("assignment").alias("member", "size")
    )
    per_sync = sizes.groupBy("group", "at", "generation").agg(
        F.count("*").alias("members"),
        F.max("size.partitions").alias("max_partitions"),
        F.min("size.partitions").alias("min_partitions"),
        F.sum("size.bytes").alias("assignment_bytes"),
    )
    return per_sync.withColumn(
        "skew",
        F.when(F.col("min_partitions") > 0, F.col("max_partitions") / F.col("min_partitions")),
    )


def _storms(rebalances: Any, options: AnalysisOptions, F: Any) -> Any:
    """Runs of ``storm_threshold`` or more rebalances of a group within ``storm_window_s``.

    Every rebalance that opens a window holding enough rebalances is an anchor; anchors
    whose windows overlap are one storm, which spans from the first anchor to the last
    rebalance in the last anchor's window."""
    from pyspark.sql import Window

    window_ms = options.storm_window_s * 1000
    ahead = Window.partitionBy("group").orderBy("ts_ms").rangeBetween(0, window_ms - 1)
    ordered = Window.partitionBy("group").orderBy("ts_ms")
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    anchors = (
        rebalances.withColumn("in_window", F.count("*").over(ahead))
        .withColumn("window_end_ms", F.max("ts_ms").over(ahead))
        .where(F.col("in_window") >= options.storm_threshold)
        .withColumn("previous_end_ms", F.max("window_end_ms").over(before))
        .withColumn(
            "opens",
            F.when(
                F.col("previous_end_ms").isNull() | (F.col("ts_ms") > F.col("previous_end_ms")),
                1,
            ).otherwise(0),
        )
        .withColumn("storm", F.sum("opens").over(ordered.rowsBetween(Window.unboundedPreceding, 0)))
    )
    spans = anchors.groupBy("group", "storm").agg(
        F.min("ts_ms").alias("start_ms"), F.max("window_end_ms").alias("end_ms")
    )
    inside = spans.alias("s").join(
        rebalances.select("group", "ts_ms", "trigger").alias("r"),
        (F.col("s.group") == F.col("r.group"))
        & F.col("r.ts_ms").between(F.col("s.start_ms"), F.col("s.end_ms")),
    )
    return (
        inside.groupBy("s.group", "s.start_ms", "s.end_ms")
        .agg(
            F.count("*").alias("rebalances"),
            F.collect_set("r.trigger").alias("triggers"),
        )
        .select(
            F.col("group"),
            F.timestamp_millis("start_ms").alias("start"),
            F.timestamp_millis("end_ms").alias("end"),
            ((F.col("end_ms") - F.col("start_ms")) / 1000).alias("seconds"),
            "rebalances",
            F.array_sort("triggers").alias("triggers"),
        )
    )


def _group_summary(
    entries: Any,
    rebalances: Any,
    durations: Any,
    churn: Any,
    states: Any,
    triggers: Any,
    skew: Any,
    storms: Any,
    F: Any,
) -> Any:
    from pyspark.sql import Window

    groups = (
        entries.where(F.col("group").isNotNull())
        .groupBy("group")
        .agg(
            F.min("at").alias("first_seen"),
            F.max("at").alias("last_seen"),
            F.array_sort(F.collect_set("node")).alias("nodes"),
            F.max(F.when(F.col("type") == "join_completed", F.col("generation"))).alias(
                "last_generation"
            ),
        )
    )
    counts = rebalances.groupBy("group").agg(F.count("*").alias("rebalances"))
    duration_stats = durations.groupBy("group").agg(
        F.percentile_approx("duration_ms", 0.5, 10000).alias("duration_p50_ms"),
        F.percentile_approx("duration_ms", 0.95, 10000).alias("duration_p95_ms"),
        F.max("duration_ms").alias("duration_max_ms"),
    )
    trigger_map = triggers.groupBy("group").agg(
        F.map_from_entries(F.collect_list(F.struct("trigger", "count"))).alias("triggers")
    )
    state_map = states.groupBy("group").agg(
        F.map_from_entries(F.collect_list(F.struct("state", "seconds"))).alias("seconds_in_state")
    )
    latest = Window.partitionBy("group").orderBy(F.desc("at"))
    last_skew = (
        skew.withColumn("n", F.row_number().over(latest))
        .where(F.col("n") == 1)
        .select(
            "group",
            F.col("max_partitions").alias("assignment_max_partitions"),
            F.col("min_partitions").alias("assignment_min_partitions"),
            F.col("skew").alias("assignment_skew"),
        )
    )
    storm_counts = storms.groupBy("group").agg(
        F.count("*").alias("storms"), F.max("rebalances").alias("largest_storm")
    )
    summary = groups
    for part in (counts, duration_stats, churn, trigger_map, state_map, last_skew, storm_counts):
        summary = summary.join(part, "group", "left")
    return summary.fillna(0, subset=["rebalances", "storms", "largest_storm"])


def _totals(summary: Any, entries: Any, F: Any) -> dict[str, Any]:
    row = summary.agg(
        F.count("*").alias("groups"),
        F.sum("rebalances").alias("rebalances"),
        F.sum("members_joined").alias("members_joined"),
        F.sum("members_left").alias("members_left"),
        F.sum("members_expired").alias("members_expired"),
        F.sum("session_expiries").alias("session_expiries"),
        F.sum("storms").alias("storms"),
    ).first()
    span = entries.agg(
        F.count("*").alias("entries"),
        F.countDistinct("node").alias("nodes"),
        F.min("at").alias("start"),
        F.max("at").alias("end"),
    ).first()
    totals = {k: (v or 0) for k, v in row.asDict().items()}
    totals.update(
        entries=span["entries"],
        nodes=span["nodes"],
        start=span["start"].isoformat() if span["start"] else None,
        end=span["end"].isoformat() if span["end"] else None,
    )
    return totals


def _duration_histogram(durations: Any, F: Any) -> list[tuple[float, int]]:
    """Rebalance durations in power-of-two millisecond buckets, counted in Spark."""
    bucket = F.when(F.col("duration_ms") < 1, F.lit(0)).otherwise(
        F.floor(F.log2(F.col("duration_ms"))) + 1
    )
    rows = durations.groupBy(bucket.alias("b")).count().orderBy("b").collect()
    return [((0.0 if r["b"] == 0 else 2 ** (r["b"] - 1) / 1000), int(r["count"])) for r in rows]
