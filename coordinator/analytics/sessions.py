"""Member sessions (joined until left, expired, evicted or replaced) and, per client,
how they went: the ``sessions`` and ``client_churn`` tables."""

from __future__ import annotations

from typing import Any

ORDER = ("ts_ms", "node", "seq")


def sessions(entries: Any, F: Any) -> Any:
    """One row per member session: from member_joined (or the static replacement that made
    it) to member_left, _expired, _evicted or its replacement; ``open`` when the journals
    end first. Keyed by (group, member); a member id seen again starts a new session."""
    from pyspark.sql import Window

    kind = F.col("type")
    none = F.lit(None).cast("string")

    def row(member: str, is_start: int, outcome: Any, removal_reason: Any) -> Any:
        return F.struct(
            F.col(member).alias("member"),
            F.lit(is_start).alias("is_start"),
            outcome.alias("outcome"),
            removal_reason.alias("removal_reason"),
        )

    ends = ("member_left", "member_expired", "member_evicted")
    # One pass over the entries: a join starts a session, a removal ends one, a static
    # member's replacement does both (the new member's start, the old one's end).
    rows_of_entry = (
        F.when(kind == "member_joined", F.array(row("member", 1, none, none)))
        .when(
            kind == "static_member_replaced",
            F.array(row("member", 1, none, none), row("old_member", 0, F.lit("replaced"), none)),
        )
        .otherwise(
            F.array(
                row("member", 0, F.regexp_replace(kind, "^member_", ""), F.col("removal_reason"))
            )
        )
    )
    cols = ("group", "ts_ms", "node", "seq", "instance", "client_id", "client_host")
    by_member = Window.partitionBy("group", "member").orderBy(*ORDER)
    numbered = (
        entries.where(kind.isin("member_joined", "static_member_replaced", *ends))
        .select(*cols, F.inline(rows_of_entry))
        # By group: the windows by member and by instance then need no other shuffle.
        .repartition("group")
        .withColumn(
            "session",
            F.sum("is_start").over(by_member.rowsBetween(Window.unboundedPreceding, 0)),
        )
    )
    start = F.col("is_start") == 1
    rows = numbered.groupBy("group", "member", "session").agg(
        F.min(F.when(start, F.struct(*ORDER, "client_id", "client_host"))).alias("s"),
        F.min(F.when(~start, F.struct(*ORDER, "outcome", "removal_reason"))).alias("e"),
        F.max("instance").alias("instance"),
    )
    # A restarted static member has no client id of its own in the journal: its
    # instance's previous session's.
    by_instance = (
        Window.partitionBy("group", "instance")
        .orderBy(F.col("s.ts_ms"))
        .rowsBetween(Window.unboundedPreceding, 0)
    )

    def inherited(name: str) -> Any:
        own = F.col(f"s.{name}")
        return F.when(
            F.col("instance").isNotNull(), F.last(own, ignorenulls=True).over(by_instance)
        ).otherwise(own)

    start_ms, end_ms = F.col("s.ts_ms"), F.col("e.ts_ms")
    return rows.select(
        "group",
        "member",
        "instance",
        inherited("client_id").alias("client_id"),
        F.regexp_replace(inherited("client_host"), "^/", "").alias("client_host"),
        F.coalesce("s.node", "e.node").alias("node"),
        F.timestamp_millis(start_ms).alias("joined"),
        F.timestamp_millis(end_ms).alias("ended"),
        F.coalesce("e.outcome", F.lit("open")).alias("outcome"),
        F.col("e.removal_reason").alias("removal_reason"),
        ((end_ms - start_ms) / 1000).alias("lifetime_s"),
        start_ms.alias("joined_ms"),
        end_ms.alias("ended_ms"),
        F.to_date(F.timestamp_millis(F.coalesce(start_ms, end_ms))).alias("date"),
    )


def client_churn(sessions: Any, F: Any) -> Any:
    """Per group and client (client id and host): sessions, how they ended, lifetimes."""
    outcome = F.col("outcome")
    return sessions.groupBy("group", "client_id", "client_host").agg(
        F.count("*").alias("sessions"),
        F.count("ended").alias("ended"),
        F.count(F.when(outcome == "left", 1)).alias("left"),
        F.count(F.when(outcome == "expired", 1)).alias("expired"),
        F.count(F.when(outcome == "evicted", 1)).alias("evicted"),
        F.count(F.when(outcome == "replaced", 1)).alias("replaced"),
        F.percentile_approx("lifetime_s", 0.5, 10000).alias("lifetime_p50_s"),
        F.min("joined").alias("first_joined"),
        F.max("ended").alias("last_ended"),
        # Not countDistinct: Spark would then aggregate by member first, a percentile
        # buffer for every member.
        F.size(F.collect_set("member")).cast("long").alias("members"),
        # A session began after another had ended: one consumer coming back, not several
        # sharing a client id (kafka-python's default) and host.
        (F.max("joined_ms") > F.min("ended_ms")).alias("came_back"),
    )
