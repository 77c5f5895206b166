"""What a cluster node reports besides group events: for the log, the journal and metrics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionsAcquired:
    node_id: int
    partitions: list[int]
    epochs: list[int]  # the new epochs (fencing tokens), in partition order
    groups: int  # groups loaded
    load_ms: float
    owned: int  # partitions this node owns now
    handed_over: int = 0  # of the groups, those loaded with their previous owner's hand-over


@dataclass(frozen=True, slots=True)
class PartitionsReleased:
    """Handed over: the plan gives them to another node, or this node is stopping."""

    node_id: int
    partitions: list[int]
    reason: str
    owned: int
    handed_over: int = 0  # groups whose in-memory state went with them (group/handover.py)


@dataclass(frozen=True, slots=True)
class PartitionsFenced:
    """Another node took them over (this one was presumed dead): unloaded at once."""

    node_id: int
    partitions: list[int]
    owned: int


@dataclass(frozen=True, slots=True)
class LeaseRenewed:
    """Each renewal (metrics only: once a second is not journal material)."""

    node_id: int
    live_nodes: int


ClusterEvent = PartitionsAcquired | PartitionsReleased | PartitionsFenced | LeaseRenewed
