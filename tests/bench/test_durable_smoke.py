"""The durable-commit benchmark runs end to end at tiny size (numbers are not checked)."""

from __future__ import annotations

import pytest

from bench import durable

pytestmark = pytest.mark.integration


def test_durable_benchmark_measures_both_stores() -> None:
    rows = durable.main(["--quick", "--no-write"])
    assert [r["committers"] for r in rows] == [1, 10]
    for r in rows:
        assert float(r["sqlite_partitions_per_s"]) > 0
        assert float(r["memory_partitions_per_s"]) > 0
        assert 0 < float(r["sqlite_p50_ms"]) <= float(r["sqlite_p99_ms"])
