"""The cluster benchmark runs end to end at tiny size: a failover is measured against a real
PostgreSQL, and two nodes answer heartbeats without errors (numbers are not checked)."""

from __future__ import annotations

import pytest

from bench import cluster

pytestmark = [pytest.mark.integration, pytest.mark.bench]


def test_cluster_benchmark_measures_failover_and_both_node_counts() -> None:
    result = cluster.main(["--quick", "--no-write"])
    assert len(result["failover_s"]["all"]) == 2
    # A killed node's groups move once its lease has run out, not before.
    assert min(result["failover_s"]["all"]) >= result["meta"]["lease_timeout_ms"] / 1000 - 0.5
    for runs in (result["heartbeats"]["one_node_runs"], result["heartbeats"]["two_nodes_runs"]):
        assert all(r["errors"] == {} and r["requests"] > 0 for r in runs)
