"""The regex-attack benchmark runs end to end once (latencies are not checked)."""

from __future__ import annotations

import pytest

from bench import regex_attack

pytestmark = pytest.mark.integration


def test_regex_attack_benchmark_measures_baseline_and_attack() -> None:
    summary = regex_attack.main(["--quick"])
    assert set(summary) == {"baseline", "under attack"}
    for s in summary.values():
        assert 0 < s["p50_ms"] <= s["p99_ms"]
        assert s["heartbeats_per_run"] > 10
