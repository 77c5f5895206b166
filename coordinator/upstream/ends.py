"""Log-end offsets of the upstream's partitions as last read, and the groups' lag: what the
console, ``groups describe`` and the metrics show. Sans-IO: ``lag.py`` reads the offsets
from the upstream and stores them here; without an upstream it stays empty (no lag)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class UpstreamState:
    """What the daemon last knew of its upstream (None: no upstream)."""

    reachable: bool | None = None
    error: str | None = None


@dataclass(slots=True)
class LogEnds:
    #: (topic, partition) -> log-end offset (the upstream's latest offset, ListOffsets -1).
    ends: Mapping[TopicPartition, int] = field(default_factory=lambda: MappingProxyType({}))
    #: When they were read (the daemon's clock, ms); None: never.
    read_ms: int | None = None
    #: (group, topic) -> the group's lag on the topic, summed over partitions with a
    #: committed offset and a known end (for the metrics; replaced whole at each read).
    totals: Mapping[tuple[str, str], int] = field(default_factory=lambda: MappingProxyType({}))
    #: The upstream's reachability (``serve --upstream``); None: no upstream.
    upstream: UpstreamState | None = None

    def lag(self, topic: str, partition: int, committed: int) -> int | None:
        """A partition's lag: its log end minus the committed offset (None: unknown)."""
        end = self.ends.get((topic, partition))
        if end is None or committed < 0:
            return None
        return max(end - committed, 0)

    def group_lag(self, committed: Mapping[TopicPartition, int]) -> int | None:
        """A group's total lag over its committed partitions with a known end."""
        lags = [self.lag(t, p, offset) for (t, p), offset in committed.items()]
        known = [lag for lag in lags if lag is not None]
        return sum(known) if known else None


def totals(
    committed: Mapping[str, Mapping[TopicPartition, int]], ends: Mapping[TopicPartition, int]
) -> dict[tuple[str, str], int]:
    """(group, topic) -> lag, from each group's committed offsets and the log ends."""
    out: dict[tuple[str, str], int] = {}
    for group, offsets in committed.items():
        for (topic, partition), offset in offsets.items():
            end = ends.get((topic, partition))
            if end is None or offset < 0:
                continue
            out[(group, topic)] = out.get((group, topic), 0) + max(end - offset, 0)
    return out
