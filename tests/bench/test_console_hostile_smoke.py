"""The hostile-client console benchmarks run at tiny size (their figures are the
benchmarks' job: bench/results/console_slow_http.md and console_live.md)."""

from __future__ import annotations

import pytest

from bench import console_live, console_slow_http

pytestmark = pytest.mark.integration  # daemon processes, seconds of load each


def test_slow_http_clients_benchmark_probes_kafka_in_both_conditions() -> None:
    result = console_slow_http.main(["--quick"])
    assert set(result) == {"limits", "no limits"}
    assert all(r["probes"] > 0 for r in result.values())
    assert result["limits"]["answered"] == result["limits"]["probes"]


def test_live_pages_benchmark_opens_pages_and_heartbeats() -> None:
    result = console_live.main(["--quick"])
    assert result["pages"]["pages_open"] == 10
    assert result["baseline"]["heartbeats"] > 0 and result["pages"]["heartbeats"] > 0
