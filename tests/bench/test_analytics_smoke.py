"""The analytics benchmark runs end to end at tiny size: a synthetic journal of 3 nodes,
analysed on Spark, must agree with what the generator wrote (time is not checked)."""

from __future__ import annotations

import pytest

from bench import analytics
from coordinator.analytics.command import NO_JAVA, java_available

# Spark needs Java: without it these are skipped with that one line as the reason.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.bench,
    pytest.mark.skipif(not java_available(), reason=NO_JAVA),
]


def test_analytics_benchmark_agrees_with_its_generator() -> None:
    result = analytics.main(["--quick", "--no-write"])  # raises if the counts disagree
    assert result["events"] >= 1_000
    assert result["nodes"] == 3
    assert result["rebalances"] > 0
