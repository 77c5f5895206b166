"""Partition moves reach the journal and the metrics; lease renewals only the metrics."""

from __future__ import annotations

from coordinator.cluster.events import (
    LeaseRenewed,
    PartitionsAcquired,
    PartitionsFenced,
    PartitionsReleased,
)
from coordinator.journal.schema import to_entry
from coordinator.telemetry.metrics import Metrics


def test_partition_moves_are_journaled_and_renewals_are_not():
    acquired = to_entry(PartitionsAcquired(2, [3, 7], [4, 4], 12, 1.5, 9), 1_700_000_000.0, 2)
    assert acquired is not None
    assert (acquired["type"], acquired["partitions"], acquired["epochs"], acquired["node"]) == (
        "partitions_acquired",
        [3, 7],
        [4, 4],
        2,
    )
    released = to_entry(PartitionsReleased(2, [3], "stopping", 8), 1_700_000_000.0, 2)
    assert released is not None and released["reason"] == "stopping"
    fenced = to_entry(PartitionsFenced(2, [7], 7), 1_700_000_000.0, 2)
    assert fenced is not None and fenced["type"] == "partitions_fenced"
    assert to_entry(LeaseRenewed(2, 3), 1_700_000_000.0, 2) is None


def test_metrics_follow_the_partitions_owned_and_count_moves():
    m = Metrics()
    m.on_event(PartitionsAcquired(1, [0, 1, 2], [1, 1, 1], 5, 20.0, 3))
    m.on_event(PartitionsReleased(1, [2], "another node's share", 2))
    m.on_event(PartitionsFenced(1, [1], 1))
    m.on_event(LeaseRenewed(1, 2))
    value = m.registry.get_sample_value
    assert value("group_coordinator_partitions_owned") == 1
    assert value("group_coordinator_partition_moves_total", {"how": "acquired"}) == 3
    assert value("group_coordinator_partition_moves_total", {"how": "released"}) == 1
    assert value("group_coordinator_partition_moves_total", {"how": "fenced"}) == 1
    assert value("group_coordinator_lease_renewals_total") == 1
    assert value("group_coordinator_partition_load_seconds_count") == 1
