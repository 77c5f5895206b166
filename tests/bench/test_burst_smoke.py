"""The burst benchmark runs end to end at tiny size (timings are not checked)."""

from __future__ import annotations

import pytest

from bench import burst

pytestmark = pytest.mark.integration  # a daemon process


def test_burst_benchmark_runs_and_no_member_is_fenced() -> None:
    result = burst.main(["--quick", "--no-write"])
    for samples in result["sizes"].values():
        [run] = samples
        assert run["classic"]["ok"]
        consumer = run["consumer"]
        assert consumer["fenced"] == 0
        # Every member ends at the last join's epoch, owning its share of the partitions.
        assert consumer["group_epoch"] == consumer["members"]
        # ... and the coordinator says so.
        assert consumer["server_state"] == "Stable"
        assert consumer["server_epochs"] == [consumer["members"]] * 2
    rows = burst.summary(result)["rows"]
    assert set(rows) == {"20", "40"} and all(not r["failed"] for r in rows.values())
