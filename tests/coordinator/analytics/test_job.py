"""The analysis of a hand-built journal of four nodes: who churns, how storms are cut and
labelled, time in each state across a move between nodes, ties within a millisecond,
an old journal without ``seq``, and reruns that parse only new or changed files.

One Spark session and one run of the job for the whole module (Spark is slow to start).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from coordinator.analytics import charts, ingest
from coordinator.analytics.command import (
    NO_JAVA,
    analysis_settings,
    analyze_journals,
    java_available,
    spark_session,
    with_class_archive,
)
from coordinator.analytics.job import Analysis, AnalysisOptions

from .journal import T0, Journal, kip848_journal

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not java_available(), reason=NO_JAVA)]

END = T0 + 600_000  # the last entry of the journals
TIE = T0 + 11_000  # "moved": CompletingRebalance and Stable in one millisecond


def scenario() -> Journal:
    j = Journal()
    # flappy (node 0): a steady member, then client etl-7 on h3 joins and leaves 8 times
    # (each living 1.5 s), then 50 s later one more member: not part of the storm.
    j.join(0, T0, "flappy", "svc-1", "svc", "/h1", join_ms=3000)
    for i in range(8):
        t = T0 + 40_000 + i * 2_500
        j.join(0, t, "flappy", f"etl-7-{i}", "etl-7", "/h3")
        j.remove(0, t + 1_500, "flappy", f"etl-7-{i}", "left", reason="bye")
    j.join(0, T0 + 109_000, "flappy", "late-1", "late", "/h2")
    j.add(0, END, "offsets_committed", "flappy", count=3)

    # deployed (node 1): three kafka-python consumers start (5 rebalances in 2 s), later
    # the static one restarts with a new member id.
    t = T0 + 200_000
    for k, host in enumerate(("/h5", "/h6", "/h7")):
        instance = "inst-c" if k == 2 else None
        j.join(1, t + 500 * k, "deployed", f"kp-{k}", "kafka-python-3.0.12", host, instance)
    rejoined = "member kp-0 rejoined in Stable (client reason: metadata changed)"
    j.rebalance(1, t + 1_500, "deployed", "member_rejoined", rejoined, 100, 10)
    j.rebalance(1, t + 2_000, "deployed", "member_rejoined", "member kp-1 rejoined in Stable",
                100, 10)  # fmt: skip
    j.add(1, T0 + 300_000, "static_member_replaced", "deployed", instance="inst-c",
          old_member="kp-2", member="kp-2b")  # fmt: skip
    j.members["deployed"][2] = "kp-2b"
    j.rebalance(1, T0 + 300_000, "deployed", "static_member_replaced",
                "static member inst-c rejoined as kp-2b", 100, 10)  # fmt: skip

    # kp-deploy (node 1), as kafka-python writes it: three consumers with the default client
    # id on one host start (3 joins and the leader rejoining: 4 rebalances in 25 ms), and
    # stop together 10 s later. A deploy, not a flap.
    t = T0 + 400_000
    for k, ms in enumerate((0, 5, 17)):
        j.join(1, t + ms, "kp-deploy", f"kpd-{k}", "kafka-python-3.0.12", "/127.0.0.1")
    j.rebalance(1, t + 25, "kp-deploy", "member_rejoined", "member kpd-0 rejoined in Stable",
                10, 2)  # fmt: skip
    for k in (1, 2):  # they leave while the leader's LeaveGroup rebalance runs
        j.add(1, t + 10_000, "member_left", "kp-deploy", member=f"kpd-{k}", instance=None,
              reason=None)  # fmt: skip
        j.members["kp-deploy"].remove(f"kpd-{k}")
    j.remove(1, t + 10_000, "kp-deploy", "kpd-0", "left")

    # cascade (node 0): six members join 20 s apart, then all expire within 4 s.
    for k in range(6):
        j.join(0, T0 + 100_000 + 20_000 * k, "cascade", f"c-{k}", f"worker-{k}", "/h8")
    for k in range(6):
        j.remove(0, T0 + 250_000 + 800 * k, "cascade", f"c-{k}", "expired",
                 timer="session_timeout")  # fmt: skip

    # moved: on node 0, then node 1 takes it over; a member is evicted, the last leaves,
    # the group is deleted.
    j.join(0, T0 + 10_000, "moved", "mv-1", "mover", "/h9", join_ms=1000, sync_ms=0)
    j.to(0, T0 + 100_000, "moved", "Dead")
    j.add(0, T0 + 100_000, "group_unloaded", "moved", generation=1, members=1)
    j.add(1, T0 + 100_500, "group_loaded", "moved", state="Stable", members=1, offsets=0)
    j.state["moved"] = "Stable"
    j.join(1, T0 + 150_000, "moved", "mv-2", "mover", "/h10", join_ms=500, sync_ms=100)
    j.remove(1, T0 + 160_000, "moved", "mv-2", "evicted", join_ms=200, sync_ms=0,
             reason="group_max_size")  # fmt: skip
    j.remove(1, T0 + 170_000, "moved", "mv-1", "left", join_ms=300, reason="shutting down")
    j.to(1, T0 + 180_000, "moved", "Dead")
    j.add(1, T0 + 180_000, "group_deleted", "moved", reason="DeleteGroups")

    # kip848 (node 0): a KIP-848 consumer group's target assignments and reconciliations.
    j.add(0, T0 + 20_000, "target_assignment_computed", "kip848", generation=1,
          protocol="uniform", members=1, count=1)  # fmt: skip
    for k, took in enumerate((40, 120, 80)):
        j.add(0, T0 + 20_000 + took, "member_reconciled", "kip848", member=f"k-{k}",
              generation=1, duration_ms=took)  # fmt: skip
    j.add(0, T0 + 30_000, "target_assignment_computed", "kip848", generation=2,
          protocol="uniform", members=3, count=2)  # fmt: skip

    # legacy (node 2): a journal written before entries had seq.
    j.join(2, T0 + 5_000, "legacy", "old-1", "old", "/h4")
    return j


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # The user's settings, and under them what analyze gives a journal this small.
    mine = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
            "spark.sql.session.timeZone": "UTC"}  # fmt: skip
    session = spark_session(
        "local[2]", with_class_archive(analysis_settings(50_000, mine, "local[2]"))
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("analytics")
    j = scenario()
    journals = tmp / "journals"
    j.write(journals, 0, reverse_at=TIE)
    j.write(journals, 1)
    j.write(journals, 2, legacy=True)
    out = tmp / "out"
    analysis, report = analyze_journals(spark, [str(journals)], out, out, AnalysisOptions())
    tables = Tables(spark, analysis.tables)
    # What the analysis itself wrote, before other tests add files of their own to ``out``.
    modes = {p: p.stat().st_mode & 0o777 for p in [out, *out.rglob("*")]}
    return {"analysis": analysis, "page": report.read_text(), "tables": tables,
            "journals": journals, "out": out, "modes": modes}  # fmt: skip


class Tables(dict[str, list[dict[str, Any]]]):
    """A table's rows, read when first asked for."""

    def __init__(self, spark: Any, paths: dict[str, str]) -> None:
        super().__init__()
        self.spark, self.paths = spark, paths

    def __missing__(self, name: str) -> list[dict[str, Any]]:
        rows = [
            r.asDict(recursive=True) for r in self.spark.read.parquet(self.paths[name]).collect()
        ]
        self[name] = rows
        return rows


def summary(run: dict[str, Any], group: str) -> dict[str, Any]:
    (row,) = [r for r in run["tables"]["group_summary"] if r["group"] == group]
    return row


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def test_the_user_settings_are_the_sessions(spark: Any) -> None:
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
    assert spark.conf.get("spark.ui.enabled") == "false"
    # Under them, a small job's: its queries evaluated, not compiled (the tables below are
    # the same as compiled ones: the bench's analysis of a generated journal checks them).
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"


def test_counts_and_time_in_each_state_across_nodes(run: dict[str, Any]) -> None:
    moved = summary(run, "moved")
    assert moved["nodes"] == [0, 1]
    assert moved["rebalances"] == 4
    assert (moved["members_evicted"], moved["members_left"], moved["deletions"]) == (1, 1, 1)
    # Across the move (Dead on node 0, loaded Stable on node 1), and the tie at TIE ordered
    # by seq although the file has it backwards: CompletingRebalance lasted 0 s there.
    assert moved["seconds_in_state"] == pytest.approx(
        {"PreparingRebalance": 2.0, "CompletingRebalance": 0.1, "Stable": 157.7, "Empty": 9.7}
    )
    flappy = summary(run, "flappy")
    assert flappy["seconds_in_state"] == pytest.approx(
        {"PreparingRebalance": 4.3, "CompletingRebalance": 0.14, "Stable": 600 - 4.44}
    )
    legacy = summary(run, "legacy")  # no seq: still read
    assert legacy["rebalances"] == 1 and legacy["nodes"] == [2]
    assert legacy["seconds_in_state"] == pytest.approx(
        {"PreparingRebalance": 0.1, "CompletingRebalance": 0.01, "Stable": 595 - 0.11}
    )
    cascade = summary(run, "cascade")
    assert (cascade["members_expired"], cascade["session_expiries"]) == (6, 6)
    assert summary(run, "deployed")["static_members_replaced"] == 1
    totals = run["analysis"].totals
    assert (totals["groups"], totals["rebalances"], totals["nodes"]) == (
        7, 18 + 6 + 5 + 12 + 4 + 1, 3,
    )  # fmt: skip
    kip848 = summary(run, "kip848")
    assert (kip848["target_assignments"], kip848["reconciliations"]) == (2, 3)
    assert (kip848["reconcile_p50_ms"], kip848["reconcile_max_ms"]) == (80, 120)
    assert summary(run, "flappy")["target_assignments"] == 0  # a classic group
    assert (totals["members_evicted"], totals["static_members_replaced"]) == (1, 1)


def test_duration_percentiles(run: dict[str, Any]) -> None:
    flappy = summary(run, "flappy")
    # 18 rebalances: 8 of 55 ms (leaves), 9 of 110 ms (joins), one of 3010 ms (the first).
    assert (flappy["duration_p50_ms"], flappy["duration_p95_ms"]) == (110, 3010)
    assert flappy["duration_max_ms"] == 3010


def test_sessions_say_who_joined_and_how_they_went(run: dict[str, Any]) -> None:
    sessions = {(s["group"], s["member"]): s for s in run["tables"]["sessions"]}
    etl = [s for (g, m), s in sessions.items() if m.startswith("etl-7-")]
    assert len(etl) == 8
    assert {(s["client_id"], s["client_host"], s["outcome"], s["lifetime_s"]) for s in etl} == {
        ("etl-7", "h3", "left", 1.5)
    }
    assert sessions["flappy", "svc-1"]["outcome"] == "open"
    assert sessions["flappy", "svc-1"]["ended"] is None
    replaced, successor = sessions["deployed", "kp-2"], sessions["deployed", "kp-2b"]
    assert (replaced["outcome"], replaced["instance"]) == ("replaced", "inst-c")
    assert replaced["lifetime_s"] == 99.0
    # The restarted static member's client is its instance's.
    assert (successor["client_id"], successor["client_host"], successor["outcome"]) == (
        "kafka-python-3.0.12", "h7", "open",
    )  # fmt: skip
    evicted = sessions["moved", "mv-2"]
    assert (evicted["outcome"], evicted["removal_reason"], evicted["lifetime_s"]) == (
        "evicted", "group_max_size", 10.0,
    )  # fmt: skip
    assert sessions["moved", "mv-1"]["node"] == 0  # joined on node 0, left on node 1
    assert sessions["moved", "mv-1"]["lifetime_s"] == 160.0
    assert sessions["cascade", "c-0"]["removal_reason"] == "session_timeout"
    # Partitioned by date and node, not one file.
    parts = sorted(p.name for p in (run["out"] / "tables" / "sessions").glob("date=*/node=*"))
    assert parts == ["node=0", "node=1", "node=2"]


def test_top_groups_name_the_churniest_client_in_one_sentence(run: dict[str, Any]) -> None:
    flappy = summary(run, "flappy")
    assert flappy["member_lifetime_p50_s"] == 1.5
    top = flappy["churn_clients"][0]
    assert (top["client_id"], top["client_host"], top["sessions"], top["left"]) == (
        "etl-7", "h3", 8, 8,
    )  # fmt: skip
    stories = {r["group"]: r["story"] for r in run["tables"]["top_groups"]}
    assert stories["flappy"].startswith(
        "client `etl-7` on host h3 joined and left 8 times in 19 s (median lifetime 1.5 s)"
    )
    assert "1 storm (flap)" in stories["flappy"]
    # Nobody came and went twice there: the triggers and the storm tell.
    assert stories["cascade"] == (
        "6 members expired; 12 rebalances, most of them member_expired (6); "
        "1 storm (expiry cascade)"
    )
    assert stories["legacy"] == "1 rebalance: new_member"
    # Side by side, not one coming back: said as several consumers sharing a client id.
    assert stories["kp-deploy"].startswith(
        "3 consumers of client `kafka-python-3.0.12` on host 127.0.0.1 joined and left in 10 s"
        " (median lifetime 10 s)"
    )
    # kip848 never rebalanced (its members reconcile): no row in a ranking by rebalances.
    assert [r["group"] for r in sorted(run["tables"]["top_groups"], key=lambda r: r["rank"])] == [
        "flappy", "cascade", "deployed", "kp-deploy", "moved", "legacy",
    ]  # fmt: skip
    # The summary other tools (the console's Analysis page) read: the same rows.
    summary_file = json.loads((run["out"] / "summary.json").read_text())
    assert [g["group"] for g in summary_file["top_groups"]] == [
        r["group"] for r in sorted(run["tables"]["top_groups"], key=lambda r: r["rank"])
    ]
    assert summary_file["top_groups"][0]["story"] == stories["flappy"]
    page = run["page"]
    assert "client `etl-7` on host h3 joined and left 8 times in 19 s" in page
    assert "<h2>Top 6 groups by rebalances</h2>" in page
    # The expiry cascade's storm has no member rejoining: an empty cell, not "(0)".
    assert "(0)</td>" not in page


def test_storms_end_with_their_burst_and_say_what_they_are(run: dict[str, Any]) -> None:
    storms = {s["group"]: s for s in run["tables"]["storms"]}
    assert set(storms) == {"flappy", "deployed", "kp-deploy", "cascade"}
    flap = storms["flappy"]
    # The join 50 s after the burst is within the 60 s window but not the burst.
    assert (flap["start"], flap["end"]) == (at(T0 + 40_000), at(T0 + 59_000))
    assert (flap["rebalances"], flap["kind"]) == (16, "flap")
    assert (flap["churn_client_id"], flap["churn_client_sessions"]) == ("etl-7", 8)
    assert flap["member_lifetime_p50_s"] == 1.5
    deploy = storms["deployed"]
    assert (deploy["start"], deploy["end"], deploy["rebalances"]) == (
        at(T0 + 200_000), at(T0 + 202_000), 5,
    )  # fmt: skip
    assert deploy["kind"] == "deploy"
    # Three sessions of one client id and host began and ended inside it, but together.
    kafka_python = storms["kp-deploy"]
    assert (kafka_python["rebalances"], kafka_python["kind"]) == (5, "deploy")
    assert kafka_python["churn_client_sessions"] == 3
    cascade = storms["cascade"]
    assert (cascade["start"], cascade["end"], cascade["rebalances"]) == (
        at(T0 + 250_000), at(T0 + 254_000), 6,
    )  # fmt: skip
    assert (cascade["kind"], cascade["expiries"]) == ("expiry cascade", 6)


def test_reasons_are_templates_with_the_member_apart(run: dict[str, Any]) -> None:
    reasons = {(r["group"], r["reason"], r["client_reason"]): r
               for r in run["tables"]["rebalance_reasons"]}  # fmt: skip
    joins = reasons["flappy", "adding new member <member>", None]
    assert (joins["count"], joins["members"]) == (10, 10)
    assert reasons["flappy", "LeaveGroup for (<members>)", None]["count"] == 8
    assert reasons["cascade", "member <member> expired (session timeout)", None]["count"] == 6
    rejoin = reasons["deployed", "member <member> rejoined in Stable", "metadata changed"]
    assert rejoin["count"] == 1
    assert reasons["deployed", "static member <instance> rejoined as <member>", None]["count"] == 1
    assert len(run["tables"]["rebalance_reasons"]) == 15


def test_rebalances_over_time_are_zero_filled_bins_by_trigger(run: dict[str, Any]) -> None:
    analysis: Analysis = run["analysis"]
    assert analysis.bin_seconds == 5  # 600 s of journal: 120 bins
    bins, series = charts.zero_filled(analysis)
    assert all((b - a).total_seconds() == 5 for a, b in itertools.pairwise(bins))
    assert len(bins) <= 150
    assert sum(sum(c) for c in series.values()) == analysis.totals["rebalances"]
    assert 0 in series["new_member"]  # quiet bins are there, at 0
    assert series["member_expired"][bins.index(at(T0 + 250_000))] == 6  # 250.0 to 254.0 s
    assert set(analysis.timelines) == {
        "flappy", "deployed", "kp-deploy", "cascade", "moved", "legacy",
    }  # fmt: skip
    moved = analysis.timelines["moved"]
    assert [r["state"] for r in moved if r["state"]][-2:] == ["Empty", "Dead"]
    for name in charts.CHARTS:
        assert (run["out"] / "charts" / name).stat().st_size > 0


def test_in_memory_tables_are_the_staged_ones_row_for_row(
    spark: Any, run: dict[str, Any], tmp_path: Path
) -> None:
    """A small journal's tables are kept in memory and written at the end (``analyze``
    does so below ``IN_MEMORY_BYTES``): the same tables and the same report numbers."""
    journals = tmp_path / "journals"
    j = scenario()
    j.write(journals, 0, reverse_at=TIE)
    j.write(journals, 1)
    j.write(journals, 2, legacy=True)
    out = tmp_path / "out"
    options = AnalysisOptions(in_memory=True)
    analysis, _ = analyze_journals(spark, [str(journals)], out, out, options)
    staged: Analysis = run["analysis"]
    assert set(analysis.tables) == set(staged.tables)
    mine = Tables(spark, analysis.tables)
    for name in staged.tables:
        assert sorted(map(repr, mine[name])) == sorted(map(repr, run["tables"][name])), name
    for field in ("totals", "top_groups", "storms", "bin_seconds", "over_time",
                  "duration_histogram", "triggers", "timelines"):  # fmt: skip
        assert getattr(analysis, field) == getattr(staged, field), field
    assert "table writes" in analysis.phases


def test_a_rerun_parses_only_new_or_changed_journal_files(spark: Any, run: dict[str, Any]) -> None:
    journals, out = run["journals"], str(run["out"])
    before = run["analysis"].totals["entries"]
    j = Journal()
    j.join(3, END + 10_000, "newcomer", "n-1", "new", "/h11")
    newest = j.write(journals, 3)
    staged, parsed = ingest.ingest(spark, [str(journals)], out, incremental=True)
    assert (parsed, staged.count()) == (1, before + 7)
    # The file grows (the one being written): parsed again, its old rows replaced.
    j.remove(3, END + 20_000, "newcomer", "n-1", "left")
    j.write(journals, 3)
    staged, parsed = ingest.ingest(spark, [str(journals)], out, incremental=True)
    assert (parsed, staged.count()) == (1, before + 12)
    # Only the files given this time count.
    staged, parsed = ingest.ingest(spark, [str(newest)], out, incremental=True)
    assert (parsed, staged.count()) == (0, 12)


def test_the_tables_and_the_report_are_private_like_the_journal(run: dict[str, Any]) -> None:
    """0700 directories and 0600 files, whatever the umask: they name clients and hosts."""
    out, modes = run["out"], run["modes"]
    assert any(p.suffix == ".parquet" for p in modes) and (out / "report.html") in modes
    wrong = {str(p): oct(m) for p, m in modes.items() if m != (0o700 if p.is_dir() else 0o600)}
    assert wrong == {}


def test_a_kip848_group_of_a_real_daemon_is_in_the_summary_and_the_timeline(
    spark: Any, tmp_path: Path
) -> None:
    """A daemon's journal of two real KIP-848 members: the summary counts its target
    assignments and reconciliations, the timeline draws its states and its size."""
    journal = tmp_path / "journal"
    asyncio.run(kip848_journal(journal))
    out = tmp_path / "out"
    analysis, report = analyze_journals(spark, [str(journal)], out, out, AnalysisOptions())
    (group,) = [g for g in analysis.top_groups if g["group"] == "kip848"]
    assert (group["target_assignments"], group["reconciliations"]) == (2, 3)
    assert group["reconcile_p50_ms"] is not None and group["rebalances"] == 4
    # Its rebalances last from the epoch bump until Stable (or Empty) again: the second
    # member's, until both had reconciled, is the longest.
    assert group["duration_p50_ms"] is not None
    assert group["duration_max_ms"] >= group["reconcile_max_ms"]
    timeline = analysis.timelines["kip848"]
    states = [r["state"] for r in timeline if r["state"]]
    assert states[:3] == ["Assigning", "Stable", "Assigning"] and "Reconciling" in states
    assert [r["members"] for r in timeline if r["members"] is not None] == [1, 2]
    page = report.read_text()
    assert "<th>target assignments</th>" in page and "<th>reconcile p50 ms</th>" in page


def test_the_summary_file_has_no_internal_keys_and_times_to_the_millisecond(
    run: dict[str, Any],
) -> None:
    summary_file = json.loads((run["out"] / "summary.json").read_text())
    (flappy,) = [g for g in summary_file["top_groups"] if g["group"] == "flappy"]
    client = flappy["churn_clients"][0]
    assert "neg_lifetime" not in client and client["client_id"] == "etl-7"
    assert client["first_joined"] == "2026-01-01T00:00:40.000"
    assert {s["start"] for s in summary_file["storms"]} >= {"2026-01-01T00:00:40.000"}
    # The report's storm table: times as the journal has them, not microseconds.
    assert "<td>2026-01-01 00:00:40.000</td>" in run["page"]
    assert ".000000" not in run["page"]


def test_chart_ticks_read_as_times_of_day() -> None:
    t = datetime(2026, 1, 1, 10, 43, 42, 550_000)
    assert charts.tick_label(t, 2.0) == "10:43:42.550"
    assert charts.tick_label(t.replace(microsecond=0), 600) == "10:43:42"
    assert charts.tick_label(t, 3 * 86400) == "01-01 10:43"
