"""Which node coordinates a group, and whether this one may answer for it (sans-IO).

One node alone coordinates everything (``SingleNode``). In a cluster (``ClusterRouting``)
a group belongs to its coordinator partition, and a node answers for it only while it owns
that partition, has loaded it, and its own lease has not run out (a paused node stops
answering by itself, at the latest when its lease would have expired).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from protocol.errors import ErrorCode

from ..security.config import SecurityProtocol
from .placement import partition_for


@dataclass(frozen=True, slots=True)
class NodeAddress:
    """A node as clients reach it: its advertised address per security protocol."""

    node_id: int
    listeners: dict[str, tuple[str, int]]  # SecurityProtocol value -> (host, port)
    #: Its web console ("http://host:port/"), None when it serves none.
    console_url: str | None = None

    def address_for(self, protocol: SecurityProtocol | None) -> tuple[str, int] | None:
        """The address a client of ``protocol`` uses (None: the node has no such
        listener; Kafka then leaves the node out of that listener's answers)."""
        if protocol is None:
            return next(iter(self.listeners.values()), None)
        return self.listeners.get(protocol.value)


class PartitionState(Enum):
    LOADING = "loading"  # acquired; its groups are being read
    OWNED = "owned"


class SingleNode:
    """One node coordinates every group."""

    clustered = False

    def refusal(self, group_id: str, now_ms: int) -> ErrorCode | None:
        return None

    def coordinator(self, group_id: str) -> int | None:
        return None  # this node

    def stale(self, now_ms: int) -> bool:
        return False

    def nodes(self) -> list[NodeAddress]:
        return []  # just this node


@dataclass
class ClusterRouting:
    """What this node knows of the cluster, as of its last lease renewal."""

    node_id: int
    partitions: int
    #: Partition -> its owner, from the database (absent: nobody owns it now).
    owners: dict[int, int] = field(default_factory=dict)
    #: The live nodes by id.
    live: dict[int, NodeAddress] = field(default_factory=dict)
    #: The partitions this node holds, and whether they are loaded.
    mine: dict[int, PartitionState] = field(default_factory=dict)
    #: This node's clock reading past which its lease may have run out.
    lease_valid_until_ms: int = 0

    clustered = True

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.partitions)

    def refusal(self, group_id: str, now_ms: int) -> ErrorCode | None:
        """None if this node answers for the group now; else the error Kafka gives."""
        state = self.mine.get(self.partition_of(group_id))
        if state is None or now_ms >= self.lease_valid_until_ms:
            return ErrorCode.NOT_COORDINATOR
        if state is PartitionState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def stale(self, now_ms: int) -> bool:
        """This node's lease may have run out: what it knows of the owners may be old (it
        is paused or cut off from the database) and others may have moved on."""
        return now_ms >= self.lease_valid_until_ms

    def coordinator(self, group_id: str) -> int | None:
        """The owner's node id (None: no live owner right now)."""
        owner = self.owners.get(self.partition_of(group_id))
        return owner if owner in self.live else None

    def nodes(self) -> list[NodeAddress]:
        return [self.live[n] for n in sorted(self.live)]


Routing = SingleNode | ClusterRouting
