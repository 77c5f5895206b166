"""Rebalance storms: bursts of one group's rebalances, and what kind of burst each is.

A burst is a run of a group's rebalances each starting within ``storm_gap_ms`` of the one
before (window / threshold: the pace of a storm), so it ends with its last rebalance. A
burst is a storm when some ``storm_window_s`` of it hold ``storm_threshold`` rebalances.

Kinds, in this order:
- ``flap``: a client came and went and came back within the storm (two or more of its
  sessions started and ended inside it, one starting after another ended), or one member
  rejoined three or more times (a leader rejoining in a loop);
- ``expiry cascade``: half or more of its rebalances were members expiring;
- ``deploy``: the rest: members arriving, leaving or restarting once each (a rollout, a
  scale-up: three kafka-python consumers starting cost 4-5 rebalances).
"""

from __future__ import annotations

from typing import Any

ORDER = ("ts_ms", "node", "seq")

#: Rejoins of one member that make a storm a flap.
REPEATS_FOR_FLAP = 3

#: How far apart the journal may stamp the events of one state-machine call.
SAME_CALL_MS = 10


def in_storms(rebalances: Any, options: Any, F: Any) -> Any:
    """The rebalances that belong to a storm, with their burst and, for each, how many of
    its burst's rebalances start within the window from it (``in_window``). Several
    tables are built from these few rows: cache them rather than sort all again."""
    from pyspark.sql import Window

    by_group = Window.partitionBy("group").orderBy(*ORDER)
    gap = F.col("ts_ms") - F.lag("ts_ms").over(by_group)
    opens = F.when(gap.isNull() | (gap > options.storm_gap_ms), 1).otherwise(0)
    burst = Window.partitionBy("group", "burst")
    ahead = burst.orderBy("ts_ms").rangeBetween(0, options.storm_window_s * 1000 - 1)
    return (
        rebalances.select("group", *ORDER, "trigger", "reason_member")
        .withColumn("opens", opens)
        .withColumn(
            "burst", F.sum("opens").over(by_group.rowsBetween(Window.unboundedPreceding, 0))
        )
        .withColumn("in_window", F.count("*").over(ahead))
        # Sorted as the window before needs: no other sort.
        .withColumn("peak", F.max("in_window").over(burst))
        .where(F.col("peak") >= options.storm_threshold)
        .select("group", "ts_ms", "trigger", "reason_member", "burst", "in_window")
    )


def storms(in_storm: Any, sessions: Any, F: Any) -> Any:
    """One row per storm, from ``in_storms`` (its rebalances) and the sessions."""
    key = ("group", "burst")
    spans = in_storm.groupBy(*key).agg(
        F.min("ts_ms").alias("start_ms"),
        F.max("ts_ms").alias("end_ms"),
        F.count("*").alias("rebalances"),
        F.max("in_window").alias("peak"),
        F.count(F.when(F.col("trigger") == "member_expired", 1)).alias("expiries"),
    )
    trigger_map = (
        in_storm.groupBy(*key, "trigger")
        .count()
        .groupBy(*key)
        .agg(F.map_from_entries(F.collect_list(F.struct("trigger", "count"))).alias("triggers"))
    )
    # Only rejoins count: a member joining, rejoining once and leaving is a deploy's leader.
    repeats = (
        in_storm.where((F.col("reason_member") != "") & (F.col("trigger") == "member_rejoined"))
        .groupBy(*key, "reason_member")
        .count()
        .groupBy(*key)
        .agg(F.max(F.struct("count", "reason_member")).alias("m"))
        .select(
            *key,
            F.col("m.reason_member").alias("top_member"),
            F.col("m.count").alias("top_member_rebalances"),
        )
    )
    # Sessions that began and ended inside the storm: who flapped, and how long they lived.
    s = spans.alias("s")
    lived = (
        sessions.alias("x")
        .join(
            s,
            (F.col("x.group") == F.col("s.group"))
            # The join that started the storm is stamped just before its first rebalance:
            # the events of one call are stamped as they are written, up to a few ms apart.
            & (F.col("x.joined_ms") >= F.col("s.start_ms") - SAME_CALL_MS)
            & (F.col("x.ended_ms") <= F.col("s.end_ms")),
        )
        .select(
            "s.group",
            "s.burst",
            "x.client_id",
            "x.client_host",
            "x.lifetime_s",
            "x.joined_ms",
            "x.ended_ms",
        )
    )
    # A client came back when one of its sessions began after another had ended: several
    # consumers sharing a client id and host (kafka-python's default) that start together
    # and stop together did not.
    per_client = (
        lived.groupBy(*key, "client_id", "client_host")
        .agg(
            (F.max("joined_ms") > F.min("ended_ms")).alias("came_back"),
            F.count("*").alias("n"),
            F.percentile_approx("lifetime_s", 0.5, 10000).alias("p50"),
        )
        .groupBy(*key)
        .agg(
            F.max(F.struct("came_back", "n", "client_id", "client_host", "p50")).alias("c"),
            F.sum("n").alias("short_sessions"),
        )
    )
    lifetimes = lived.groupBy(*key).agg(
        F.percentile_approx("lifetime_s", 0.5, 10000).alias("member_lifetime_p50_s")
    )
    joined = spans
    for part in (trigger_map, repeats, per_client, lifetimes):
        joined = joined.join(part, list(key), "left")
    flap = (F.col("c.came_back") & (F.col("c.n") >= 2)) | (
        F.col("top_member_rebalances") >= REPEATS_FOR_FLAP
    )
    kind = (
        F.when(flap, "flap")
        .when(F.col("expiries") * 2 >= F.col("rebalances"), "expiry cascade")
        .otherwise("deploy")
    )
    return joined.select(
        "group",
        F.timestamp_millis("start_ms").alias("start"),
        F.timestamp_millis("end_ms").alias("end"),
        ((F.col("end_ms") - F.col("start_ms")) / 1000).alias("seconds"),
        "rebalances",
        F.col("peak").alias("most_in_window"),
        kind.alias("kind"),
        "triggers",
        "expiries",
        "top_member",
        "top_member_rebalances",
        F.col("c.client_id").alias("churn_client_id"),
        F.col("c.client_host").alias("churn_client_host"),
        F.coalesce(F.col("c.n"), F.lit(0)).alias("churn_client_sessions"),
        F.coalesce("short_sessions", F.lit(0)).alias("short_sessions"),
        "member_lifetime_p50_s",
    )
