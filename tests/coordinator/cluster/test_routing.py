"""Routing in a cluster, on the sans-IO pipeline (no sockets, no database): a node answers for
a group only while it owns and has loaded the group's coordinator partition and its lease
is live; FindCoordinator names the owner at the caller's listener; Metadata lists every
live node."""

from __future__ import annotations

from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, NodeAddress, PartitionState
from coordinator.config import Settings
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from protocol.errors import ErrorCode

from ..pipeline import Answer, Pipeline

PARTITIONS = 4
GROUP = "orders-app"
MINE = partition_for(GROUP, PARTITIONS)


def cluster(state: PartitionState | None, lease_ms: int = 60_000) -> Pipeline:
    """Node 1 of two; node 2 listens on 10.0.0.2:9092. ``state``: how node 1 holds the
    group's partition (None: node 2 owns it)."""
    p = Pipeline(Settings(node_id=1, listen=("10.0.0.1", 9092), topics=(("t", 1),)))
    routing = ClusterRouting(1, PARTITIONS, lease_valid_until_ms=p.clock.now_ms() + lease_ms)
    routing.live = {
        1: NodeAddress(1, {"PLAINTEXT": ("10.0.0.1", 9092)}),
        2: NodeAddress(2, {"PLAINTEXT": ("10.0.0.2", 9092)}),
    }
    routing.owners = {part: 2 for part in range(PARTITIONS)}
    if state is not None:
        routing.owners[MINE] = 1
        routing.mine[MINE] = state
    p.node.routing = routing
    return p


def send(p: Pipeline, body: object, version: int) -> object:
    answer = p.send(p.connect(), body, version)  # type: ignore[arg-type]
    assert isinstance(answer, Answer), answer
    return answer.body


def join(p: Pipeline) -> JoinGroupResponse:
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    body = send(p, request, 5)
    assert isinstance(body, JoinGroupResponse)
    return body


def test_a_group_of_another_nodes_partition_is_not_coordinator():
    p = cluster(None)
    assert join(p).error_code == ErrorCode.NOT_COORDINATOR
    beat = send(p, HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m"), 3)
    assert isinstance(beat, HeartbeatResponse) and beat.error_code == ErrorCode.NOT_COORDINATOR
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP, topics=None)])
    fetched = send(p, fetch, 8)
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.groups[0].error_code == ErrorCode.NOT_COORDINATOR
    assert GROUP not in p.node.groups.groups  # nothing was created here


def test_a_partition_still_loading_says_so():
    assert join(cluster(PartitionState.LOADING)).error_code == (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    )


def test_an_owned_partition_is_served_until_the_lease_would_run_out():
    p = cluster(PartitionState.OWNED, lease_ms=1000)
    assert join(p).error_code == ErrorCode.MEMBER_ID_REQUIRED  # served: KIP-394's first step
    p.clock.advance(1000)  # no renewal since: this node may have been replaced
    assert join(p).error_code == ErrorCode.NOT_COORDINATOR


def test_find_coordinator_names_the_owner_and_metadata_every_live_node():
    p = cluster(None)
    found = send(p, FindCoordinatorRequest(key=GROUP), 3)
    assert isinstance(found, FindCoordinatorResponse)
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 2, "10.0.0.2", 9092)
    meta = send(p, MetadataRequest(topics=[]), 9)
    assert isinstance(meta, MetadataResponse)
    assert [(b.node_id, b.host, b.port) for b in meta.brokers] == [
        (1, "10.0.0.1", 9092),
        (2, "10.0.0.2", 9092),
    ]


def test_a_partition_without_a_live_owner_has_no_coordinator_yet():
    p = cluster(None)
    assert isinstance(p.node.routing, ClusterRouting)
    del p.node.routing.owners[MINE]  # released, not yet taken
    found = send(p, FindCoordinatorRequest(key=GROUP), 3)
    assert isinstance(found, FindCoordinatorResponse)
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_node_whose_lease_ran_out_names_no_coordinator():
    """Cut off from the database, its view of the owners may be old: it sends clients
    nowhere (they ask another node) rather than to itself or a former owner."""
    p = cluster(None, lease_ms=1000)
    p.clock.advance(1000)
    found = send(p, FindCoordinatorRequest(key=GROUP), 3)
    assert isinstance(found, FindCoordinatorResponse)
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
