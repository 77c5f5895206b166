"""The analytics benchmark runs end to end at tiny size: a synthetic journal of 3 nodes,
analysed on Spark, must agree with what the generator wrote (time is not checked)."""

from __future__ import annotations

import pytest

from bench import analytics

pytestmark = pytest.mark.integration


def test_analytics_benchmark_agrees_with_its_generator() -> None:
    result = analytics.main(["--quick", "--no-write"])  # raises if the counts disagree
    assert result["events"] >= 3_000
    assert result["nodes"] == 3
    assert result["rebalances"] > 0
