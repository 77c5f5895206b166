"""The durable-commit benchmark runs end to end at tiny size (numbers are not checked)."""

from __future__ import annotations

import pytest

from bench import durable

pytestmark = pytest.mark.integration


def test_durable_benchmark_measures_every_store() -> None:
    rows = durable.main(["--quick", "--no-write"])
    assert [r["committers"] for r in rows] == [1, 10]
    for r in rows:
        assert float(r["sqlite_p50_ms"]) <= float(r["sqlite_p99_ms"])
        assert float(r["postgres_p50_ms"]) <= float(r["postgres_p99_ms"])
