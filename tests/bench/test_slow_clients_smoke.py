"""The slow-client benchmark runs end to end once (latencies are not checked)."""

from __future__ import annotations

import pytest

from bench import slow_clients

pytestmark = pytest.mark.integration


def test_slow_client_benchmark_measures_baseline_and_attack() -> None:
    summary = slow_clients.main(["--quick"])
    assert set(summary) == {"baseline", "under attack"}
    for s in summary.values():
        assert 0 < s["p50_ms"] <= s["p99_ms"]
        assert s["heartbeats_per_run"] > 10
