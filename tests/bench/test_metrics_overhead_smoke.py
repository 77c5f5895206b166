"""The metrics-overhead benchmark runs at tiny size (numbers are not checked)."""

from __future__ import annotations

from bench import metrics_overhead


def test_metrics_overhead_benchmark_times_heartbeats_with_and_without_metrics() -> None:
    result = metrics_overhead.main(["--quick", "--no-write"])  # asserts every heartbeat is OK
    assert set(result) >= {"off_us", "on_us", "overhead_us"}
