"""Which node coordinates a group, and whether this one may answer for it (sans-IO).

One node alone coordinates everything (``SingleNode``). In a cluster (``ClusterRouting``)
a group belongs to its coordinator partition, and a node answers for it only while it owns
that partition, has loaded it, and its own lease has not run out (a paused node stops
answering by itself, at the latest when its lease would have expired).

What a node names (FindCoordinator, Metadata, the console) never includes a node whose
lease may have run out by this node's clock. A node whose own lease has run out (cut off
from the database, or just woken from a pause) names neither itself nor the owners it last
knew as they were: it names where the placement of its last view of the live nodes, without
itself, puts the group (the node that owns it, or will once this node's lease has run out
in the database), or else one of those nodes, which can answer. It cannot tell whether it
or the database is the one cut off; the others, more likely still live, can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from protocol.errors import ErrorCode

from ..security.config import SecurityProtocol
from .placement import partition_for
from .plan import plan


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

    def coordinator(self, group_id: str, now_ms: int) -> int | None:
        return None  # this node

    def stale(self, now_ms: int) -> bool:
        return False

    def nodes(self, now_ms: int) -> list[NodeAddress]:
        return []  # just this node

    def stand_in(
        self, now_ms: int, index: int = 0, protocol: SecurityProtocol | None = None
    ) -> int | None:
        return None  # this node answers for itself


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
    #: Live nodes that may be given others' partitions, and partition -> the owner a
    #: failure took it from (``plan.py``): to foresee where a lapsed node's groups go.
    settled: set[int] = field(default_factory=set)
    previous: dict[int, int] = field(default_factory=dict)
    #: Node -> this node's clock reading past which that node's lease may have run out
    #: (absent: not known; taken as live while it is in ``live``).
    lease_ends_ms: dict[int, int] = field(default_factory=dict)

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

    def named(self, now_ms: int) -> dict[int, NodeAddress]:
        """The nodes this one may name now. While its own lease holds: the live nodes of
        its last view whose leases have not run out since. Once it has run out: that
        view's other nodes (it cannot know whether they renewed since; more likely than
        not they did and it is the one cut off), never itself."""
        if self.stale(now_ms):
            return {n: a for n, a in self.live.items() if n != self.node_id}
        ends = self.lease_ends_ms
        return {n: a for n, a in self.live.items() if ends.get(n, now_ms + 1) > now_ms}

    def coordinator(self, group_id: str, now_ms: int) -> int | None:
        """The node to name as the group's coordinator (None: none right now)."""
        return self.owner_of(self.partition_of(group_id), now_ms)

    def owner_of(self, partition: int, now_ms: int) -> int | None:
        """The partition's owner while its lease holds. A node whose own lease has run
        out names instead where the plan of the others puts the partition, or one of them
        (``named``): the clients it sends there find the new owner, or learn it there."""
        named = self.named(now_ms)
        owner = self.owners.get(partition)
        if owner in named:
            return owner
        if not self.stale(now_ms) or not named:
            return None  # this node will know within a renewal: clients ask again
        target = plan(self.partitions, named, self.owners, self.settled & set(named), self.previous)
        return target.get(partition, sorted(named)[partition % len(named)])

    def nodes(self, now_ms: int) -> list[NodeAddress]:
        named = self.named(now_ms)
        return [named[n] for n in sorted(named)]

    def stand_in(
        self, now_ms: int, index: int = 0, protocol: SecurityProtocol | None = None
    ) -> int | None:
        """The node Metadata presents in this one's place (the leader of a virtual topic's
        partition ``index``, and its controller): None while this node's lease holds (it
        presents itself), else one of the others with a listener of ``protocol``
        (``named``; None if it knows of none)."""
        if not self.stale(now_ms):
            return None
        named = self.named(now_ms)
        others = sorted(n for n, a in named.items() if a.address_for(protocol) is not None)
        return others[index % len(others)] if others else None


Routing = SingleNode | ClusterRouting
