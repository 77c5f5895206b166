"""The ``group_summary`` table: a row per group, joined from the other tables."""

from __future__ import annotations

from typing import Any


def group_summary(
    per_group: Any,
    rebalances: Any,
    durations: Any,
    sessions: Any,
    clients: Any,
    states: Any,
    triggers: Any,
    skew: Any,
    storm_table: Any,
    F: Any,
) -> Any:
    from pyspark.sql import Window

    counts = rebalances.groupBy("group").agg(F.count("*").alias("rebalances"))
    duration_stats = durations.groupBy("group").agg(
        F.percentile_approx("duration_ms", 0.5, 10000).alias("duration_p50_ms"),
        F.percentile_approx("duration_ms", 0.95, 10000).alias("duration_p95_ms"),
        F.max("duration_ms").alias("duration_max_ms"),
    )
    lifetimes = sessions.groupBy("group").agg(
        F.count("*").alias("sessions"),
        F.percentile_approx("lifetime_s", 0.5, 10000).alias("member_lifetime_p50_s"),
    )
    # The clients that churn most: most ended sessions first, then shortest lives.
    top_clients = clients.groupBy("group").agg(
        F.transform(
            F.slice(
                F.sort_array(
                    F.collect_list(
                        F.struct(
                            F.col("ended"),
                            (-F.col("lifetime_p50_s")).alias("neg_lifetime"),
                            "client_id",
                            "client_host",
                            "sessions",
                            "left",
                            "expired",
                            "evicted",
                            "replaced",
                            "lifetime_p50_s",
                            "first_joined",
                            "last_ended",
                            "came_back",
                        )
                    ),
                    asc=False,
                ),
                1,
                3,
            ),
            # The sort key had to lead the struct; it is no column for a reader.
            lambda client: client.dropFields("neg_lifetime"),
        ).alias("churn_clients")
    )
    # The member most rebalances name (a leader rejoining in a loop, say).
    by_member = (
        rebalances.where(F.col("reason_member") != "")
        .groupBy("group", "reason_member", "trigger")
        .agg(
            F.count("*").alias("n"),
            ((F.max("ts_ms") - F.min("ts_ms")) / 1000).alias("seconds"),
        )
    )
    most = Window.partitionBy("group").orderBy(F.desc("n"), "reason_member")
    top_member = (
        by_member.withColumn("rank", F.row_number().over(most))
        .where(F.col("rank") == 1)
        .select(
            "group",
            F.struct(
                F.col("reason_member").alias("member"),
                "trigger",
                F.col("n").alias("rebalances"),
                "seconds",
            ).alias("top_member"),
        )
    )
    trigger_map = triggers.groupBy("group").agg(
        F.map_from_entries(F.collect_list(F.struct("trigger", "count"))).alias("triggers")
    )
    state_map = states.groupBy("group").agg(
        F.map_from_entries(F.collect_list(F.struct("state", "seconds"))).alias("seconds_in_state")
    )
    latest = Window.partitionBy("group").orderBy(F.desc("at"), F.desc("node"), F.desc("seq"))
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
    storm_counts = storm_table.groupBy("group").agg(
        F.count("*").alias("storms"),
        F.max("rebalances").alias("largest_storm"),
        F.array_sort(F.collect_set("kind")).alias("storm_kinds"),
    )
    summary = per_group
    for part in (
        counts, duration_stats, lifetimes, top_clients, top_member, trigger_map, state_map,
        last_skew, storm_counts,
    ):  # fmt: skip
        summary = summary.join(part, "group", "left")
    return summary.fillna(0, subset=["rebalances", "storms", "largest_storm", "sessions"])
