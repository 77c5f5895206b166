"""Everything the node reports to its event sinks (log, journal, metrics)."""

from __future__ import annotations

from ..cluster.events import ClusterEvent
from ..group.events import GroupEvent

NodeEvent = GroupEvent | ClusterEvent
