"""Routing in a cluster, on the sans-IO pipeline (no sockets, no database): a node answers for
a group only while it owns and has loaded the group's coordinator partition and its lease
is live; FindCoordinator names the owner at the caller's listener; Metadata lists every
live node."""

from __future__ import annotations

from coordinator.cluster.placement import partition_for
from coordinator.cluster.plan import plan
from coordinator.cluster.routing import ClusterRouting, NodeAddress, PartitionState
from coordinator.security.config import SecurityProtocol
from coordinator.settings.config import Settings
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
from tests.coordinator.shell.pipeline import Answer, Pipeline

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


def three_nodes(lease_ms: int = 1000) -> Pipeline:
    """Node 1 of three (2 and 3 at 10.0.0.2 and 10.0.0.3), owning the group's partition
    and one other; every node settled; partition 0 was taken from node 3 by a failure."""
    p = Pipeline(Settings(node_id=1, listen=("10.0.0.1", 9092)))
    p.node.catalog.create("t", 2)
    routing = ClusterRouting(1, PARTITIONS, lease_valid_until_ms=p.clock.now_ms() + lease_ms)
    routing.live = {n: NodeAddress(n, {"PLAINTEXT": (f"10.0.0.{n}", 9092)}) for n in (1, 2, 3)}
    routing.settled = {1, 2, 3}
    others = [part for part in range(PARTITIONS) if part != MINE]
    routing.owners = {MINE: 1, others[0]: 1, others[1]: 2, others[2]: 3}
    routing.mine = {MINE: PartitionState.OWNED, others[0]: PartitionState.OWNED}
    routing.previous = {MINE: 3}
    routing.lease_ends_ms = {n: p.clock.now_ms() + lease_ms for n in (1, 2, 3)}
    p.node.routing = routing
    return p


def find(p: Pipeline, group: str = GROUP) -> tuple[int, int, str]:
    found = send(p, FindCoordinatorRequest(key=group), 3)
    assert isinstance(found, FindCoordinatorResponse)
    return found.error_code, found.node_id, found.host


def test_a_node_whose_lease_ran_out_sends_clients_where_its_groups_go():
    """Cut off from the database: it names, without itself, the node its last view's
    placement gives the group's partition (here its previous owner, node 3), at that
    node's address; never itself, never an owner it last knew whose lease it cannot see."""
    p = three_nodes()
    assert find(p) == (0, 1, "10.0.0.1")
    p.clock.advance(1000)
    assert join(p).error_code == ErrorCode.NOT_COORDINATOR
    assert find(p) == (0, 3, "10.0.0.3")
    routing = p.node.routing
    assert isinstance(routing, ClusterRouting)
    del routing.previous[MINE]  # no previous owner: as the others will place it
    expected = plan(PARTITIONS, {2, 3}, routing.owners, {2, 3})[MINE]
    assert find(p) == (0, expected, f"10.0.0.{expected}")


def test_a_node_whose_lease_ran_out_names_a_peer_when_the_plan_gives_nobody_the_group():
    p = three_nodes()
    assert isinstance(p.node.routing, ClusterRouting)
    p.node.routing.settled = set()  # nobody may take a lapsed node's partitions yet
    p.clock.advance(1000)
    error, node_id, _ = find(p)
    assert error == 0 and node_id in (2, 3)


def test_a_node_cut_off_alone_names_nobody():
    p = cluster(None, lease_ms=1000)
    assert isinstance(p.node.routing, ClusterRouting)
    del p.node.routing.live[2]
    p.clock.advance(1000)
    assert find(p)[0] == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_metadata_of_a_node_whose_lease_ran_out_presents_its_peers_instead():
    p = three_nodes()
    meta = send(p, MetadataRequest(topics=None), 9)
    assert isinstance(meta, MetadataResponse)
    assert [b.node_id for b in meta.brokers] == [1, 2, 3]
    assert {part.leader_id for t in meta.topics for part in t.partitions} == {1}
    p.clock.advance(1000)
    meta = send(p, MetadataRequest(topics=None), 9)
    assert isinstance(meta, MetadataResponse)
    assert [(b.node_id, b.host) for b in meta.brokers] == [(2, "10.0.0.2"), (3, "10.0.0.3")]
    leaders = [part.leader_id for t in meta.topics for part in t.partitions]
    assert sorted(leaders) == [2, 3] and meta.controller_id in (2, 3)
    for t in meta.topics:
        for part in t.partitions:
            assert part.replica_nodes == part.isr_nodes == [part.leader_id]


def test_no_answer_names_a_node_whose_lease_ran_out_by_this_nodes_clock():
    """Node 3's lease ends before node 1's (its last renewal was older): once it may have
    run out, node 1 names it neither as a coordinator nor in Metadata, until a renewal
    says who owns its partitions now."""
    p = three_nodes(lease_ms=2000)
    routing = p.node.routing
    assert isinstance(routing, ClusterRouting)
    theirs = next(part for part, n in routing.owners.items() if n == 3)
    group = next(f"g{i}" for i in range(1000) if partition_for(f"g{i}", PARTITIONS) == theirs)
    routing.lease_ends_ms[3] = p.clock.now_ms() + 500
    assert find(p, group)[:2] == (0, 3)
    p.clock.advance(500)
    assert find(p, group)[0] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    meta = send(p, MetadataRequest(topics=[]), 9)
    assert isinstance(meta, MetadataResponse)
    assert [b.node_id for b in meta.brokers] == [1, 2]


def test_a_node_whose_lease_ran_out_presents_only_peers_the_caller_can_reach():
    """Metadata names brokers per listener: a stand-in without the caller's listener would
    be a leader the client has no address for."""
    p = three_nodes()
    routing = p.node.routing
    assert isinstance(routing, ClusterRouting)
    routing.live[3] = NodeAddress(3, {"SASL_SSL": ("10.0.0.3", 9093)})
    p.clock.advance(1000)
    now = p.clock.now_ms()
    plaintext = {routing.stand_in(now, i, SecurityProtocol.PLAINTEXT) for i in range(4)}
    assert plaintext == {2}
    assert {routing.stand_in(now, i, SecurityProtocol.SASL_SSL) for i in range(4)} == {3}
    assert {routing.stand_in(now, i) for i in range(4)} == {2, 3}
