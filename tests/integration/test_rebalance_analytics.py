"""A scripted scenario against the real daemon, then ``analyze`` on its journal: the analysis
finds exactly the rebalances, triggers, churn, expiries and the storm that were caused."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coordinator.analytics.command import (
    NO_JAVA,
    analysis_settings,
    java_available,
    spark_session,
    with_class_archive,
)
from coordinator.client.connection import connect
from coordinator.client.member import GroupMember
from tests.wire import describe

from .clients import KafkaPythonMember
from .conftest import Daemon

# Spark needs Java: without it these are skipped with that one line as the reason.
pytestmark = [pytest.mark.integration, pytest.mark.skipif(not java_available(), reason=NO_JAVA)]

STORM_REBALANCES = 10


def member(d: Daemon, group: str) -> GroupMember:
    return GroupMember(
        d.bootstrap, group, topics=["t"], session_timeout_ms=2000, heartbeat_interval_ms=100
    )


async def wait_stable(d: Daemon, group: str, members: int, timeout_s: float = 15) -> None:
    """Until DescribeGroups shows the group Stable with ``members`` members."""
    c = await connect("127.0.0.1", d.port)
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            (g,) = (await describe(c, group)).groups
            if g.group_state == "Stable" and len(g.members) == members:
                return
            assert asyncio.get_running_loop().time() < deadline, (g.group_state, len(g.members))
            await asyncio.sleep(0.05)
    finally:
        c.close()


#: Each start and close is a rebalance at least (3 when the client rejoins once more, as
#: it mostly does): 5 of them cross the storm threshold (8) even when a loaded machine
#: makes a cycle only 2.
FLAPS = 5


def flap(d: Daemon) -> None:
    """A real kafka-python consumer (client etl-7) starts, gets its partitions and closes,
    ``FLAPS`` times: a crash-looping consumer, as the analysis should name it."""
    for _ in range(FLAPS):
        m = KafkaPythonMember(d.bootstrap, "etl", "t", client_id="etl-7")
        deadline = time.monotonic() + 15
        while not m.assigned:
            assert time.monotonic() < deadline, "etl-7 got no partitions"
            time.sleep(0.05)
        m.close()


async def scenario(d: Daemon) -> list[GroupMember]:
    """alpha: 3 join, 1 leaves, 1 is killed (session expiry) = 5 rebalances.
    beta: 2 join and commit = 2 rebalances. storm: 1 joins, then its leader rejoins 9 times
    = 10 rebalances. Returns the members still running."""
    alpha = [member(d, "alpha") for _ in range(3)]
    for n, m in enumerate(alpha, 1):
        await m.start(15)
        await wait_stable(d, "alpha", n)
    await alpha[2].close()  # LeaveGroup
    await wait_stable(d, "alpha", 2)
    await alpha[1].close(leave=False)  # killed: no LeaveGroup, its session runs out
    await wait_stable(d, "alpha", 1)

    beta = [member(d, "beta") for _ in range(2)]
    for n, m in enumerate(beta, 1):
        await m.start(15)
        await wait_stable(d, "beta", n)
    await beta[0].commit({("t", 0): 10, ("t", 1): 20, ("t", 2): 30})

    storm = member(d, "storm")
    await storm.start(15)
    for _ in range(STORM_REBALANCES - 1):
        storm.request_rejoin("storm")
        await storm.wait_stable(15)
    await wait_stable(d, "storm", 1)
    return [alpha[0], *beta, storm]


def test_analysis_finds_exactly_the_scripted_rebalances(
    start_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    journal = tmp_path / "journal"
    d = start_daemon(
        "--store", "memory", "--topic", "t:6",
        "--group-initial-rebalance-delay-ms", "0",
        "--group-min-session-timeout-ms", "500",
        "--journal-dir", str(journal),
    )  # fmt: skip

    async def drive() -> None:
        running = await scenario(d)
        await asyncio.to_thread(flap, d)
        d.stop()  # flushes the journal; the remaining members never leave
        for m in running:
            await m.close(leave=False)

    asyncio.run(drive())

    out = tmp_path / "out"
    args = ["analyze", str(journal), "--out", str(out), "--master", "local[2]"]
    # Run as a user runs it: what reaches the terminal is the JVM's output too.
    result = subprocess.run(
        [sys.executable, "-m", "coordinator.commands.cli", *args, "--storm-threshold", "8",
         "--storm-window-s", "60"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    # One line saying what runs (and where Spark's own log goes), one with the result: no
    # stage progress bars, no Spark log lines, no JVM warnings.
    said = (result.stdout + result.stderr).strip().splitlines()
    # The run that finds no class archive in the cache says why it waits for the JVM.
    said = [line for line in said if not line.startswith("saving Spark's classes")]
    assert len(said) == 2 and said[0].startswith("analyzing "), said
    assert (out / "spark.log").exists()
    # alpha, beta and storm as scripted, and kafka-python's etl.
    # kafka-python's etl: 2-3 rebalances a cycle (joined, perhaps rejoined, left), a storm too.
    assert "4 groups, " in said[1] and " 2 storms" in said[1]

    # analyze stopped its own session; the tables are read back in a small job's session.
    spark = spark_session("local[2]", with_class_archive(analysis_settings(1, {}, "local[2]")))
    tables = out / "tables"
    rows = spark.read.parquet(str(tables / "group_summary")).collect()
    groups: dict[str, Any] = {r["group"]: r.asDict(recursive=True) for r in rows}
    assert set(groups) == {"alpha", "beta", "storm", "etl"}
    alpha, beta, storm = groups["alpha"], groups["beta"], groups["storm"]

    assert alpha["rebalances"] == 5
    assert alpha["triggers"] == {"new_member": 3, "member_left": 1, "member_expired": 1}
    assert (alpha["members_joined"], alpha["members_left"], alpha["members_expired"]) == (3, 1, 1)
    assert alpha["session_expiries"] == 1
    assert alpha["storms"] == 0
    assert alpha["last_generation"] == 5
    # After the expiry one member owns all 6 partitions.
    assert (alpha["assignment_max_partitions"], alpha["assignment_skew"]) == (6, 1.0)
    assert alpha["seconds_in_state"]["Stable"] > 0

    assert beta["rebalances"] == 2
    assert beta["triggers"] == {"new_member": 2}
    assert beta["offsets_committed"] == 3
    assert (beta["members_left"], beta["members_expired"]) == (0, 0)

    assert storm["rebalances"] == STORM_REBALANCES
    assert storm["triggers"] == {"new_member": 1, "member_rejoined": STORM_REBALANCES - 1}
    assert (storm["storms"], storm["largest_storm"]) == (1, STORM_REBALANCES)
    assert storm["duration_max_ms"] >= storm["duration_p95_ms"] >= storm["duration_p50_ms"] >= 0

    storms = {r["group"]: r for r in spark.read.parquet(str(tables / "storms")).collect()}
    assert set(storms) == {"storm", "etl"}
    # The leader rejoining 9 times is one member causing them all; etl-7 came and went.
    assert (storms["storm"]["rebalances"], storms["storm"]["kind"]) == (STORM_REBALANCES, "flap")
    assert storms["storm"]["top_member_rebalances"] == STORM_REBALANCES - 1  # its rejoins
    assert (storms["etl"]["kind"], storms["etl"]["churn_client_id"]) == ("flap", "etl-7")
    assert storms["etl"]["churn_client_sessions"] == FLAPS
    over_time = spark.read.parquet(str(tables / "rebalances_over_time")).collect()
    assert sum(r["rebalances"] for r in over_time) == 17 + groups["etl"]["rebalances"]
    expiries = spark.read.parquet(str(tables / "member_churn")).agg({"session_expiries": "sum"})
    assert expiries.first()[0] == 1

    reasons = spark.read.parquet(str(tables / "rebalance_reasons"))
    expired = reasons.where("`group` = 'alpha' AND trigger = 'member_expired'").collect()
    assert [(r["reason"], r["count"]) for r in expired] == [
        ("member <member> expired (session timeout)", 1)
    ]
    sessions = spark.read.parquet(str(tables / "sessions")).where("`group` = 'alpha'").collect()
    assert sorted(r["outcome"] for r in sessions) == ["expired", "left", "open"]
    assert {r["client_host"] for r in sessions} == {"127.0.0.1"}
    # Who: the real client by its client id and host, each session ended by its LeaveGroup.
    etl = spark.read.parquet(str(tables / "sessions")).where("`group` = 'etl'").collect()
    assert (
        sorted((r["client_id"], r["client_host"], r["outcome"]) for r in etl)
        == [("etl-7", "127.0.0.1", "left")] * FLAPS
    )
    assert groups["etl"]["churn_clients"][0]["ended"] == FLAPS

    spark.stop()

    page = (out / "report.html").read_text()
    assert f"client `etl-7` on host 127.0.0.1 joined and left {FLAPS} times in " in page
    assert "storm" in page and "data:image/png;base64," in page
    # Cluster-wide, why: 6 new members, 9 leader rejoins, 1 leave, 1 expiry, and etl's.
    etl_triggers = groups["etl"]["triggers"]
    assert etl_triggers["new_member"] == FLAPS and etl_triggers["member_left"] == FLAPS
    assert f"<td>member_rejoined</td><td>{9 + etl_triggers.get('member_rejoined', 0)}</td>" in page
    assert f"<td>new_member</td><td>{6 + FLAPS}</td>" in page
    assert all((tmp_path / "out" / "charts" / name).stat().st_size > 0 for name in (
        "rebalances_over_time.png", "rebalance_durations.png", "top_groups.png",
        "group_timelines.png",
    ))  # fmt: skip
