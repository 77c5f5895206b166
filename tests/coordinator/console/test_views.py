"""What the pages are drawn from, without HTTP: the nodes of a cluster, the owners' colours,
the durations and the memory of rebalances."""

from __future__ import annotations

from coordinator.cluster.routing import ClusterRouting, NodeAddress, PartitionState
from coordinator.console.activity import REBALANCES_PER_GROUP, Activity
from coordinator.console.cluster_view import coordinator
from coordinator.console.filters import PALETTE, UNOWNED, duration
from coordinator.console.views import ConsoleState, Viewer, overview
from coordinator.group import events
from coordinator.handlers.node import Node
from coordinator.security.config import ANONYMOUS
from coordinator.settings.config import Settings
from coordinator.shared.clock import ManualClock


def relative_luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_partition_numbers_are_readable_on_every_owners_colour() -> None:
    # White numbers on each owner's colour: WCAG AA for text, 4.5:1.
    for colour in (*PALETTE, UNOWNED):
        assert 1.05 / (relative_luminance(colour) + 0.05) >= 4.5, colour
    assert len(set(PALETTE)) == len(PALETTE)


def test_durations_read_in_the_unit_that_fits() -> None:
    assert [duration(v) for v in (None, 7, 1500, 90_000, 7_200_000)] == [
        "-",
        "7 ms",
        "1.5 s",
        "1.5 min",
        "2.0 h",
    ]


def test_the_overview_lists_the_clusters_live_nodes_with_their_partitions() -> None:
    clock = ManualClock()
    node = Node(Settings(node_id=1), clock)
    node.routing = ClusterRouting(
        node_id=1,
        partitions=6,
        owners={0: 1, 1: 1, 2: 2, 3: 2, 4: 2, 5: 3},
        live={n: NodeAddress(n, {"PLAINTEXT": (f"node{n}", 9092)}) for n in (1, 2)},
        mine={0: PartitionState.OWNED, 1: PartitionState.OWNED},
        lease_valid_until_ms=clock.now_ms() + 60_000,
    )
    state = ConsoleState(node, Activity(clock.now_ms), lambda: 0)
    nodes = overview(state, Viewer(ANONYMOUS, "/127.0.0.1"))["nodes"]
    assert [(n["node_id"], n["this"], n["address"], n["partitions"]) for n in nodes] == [
        (1, True, "node1:9092", 2),
        (2, False, "node2:9092", 3),
    ]  # node 3 owns a partition but its lease ran out: it is not listed


def test_a_node_whose_lease_ran_out_lists_only_the_others_and_never_names_itself() -> None:
    """Cut off from the database: its console lists the other nodes only, and a group of
    a partition it owned is shown with the node that takes it (as FindCoordinator says)."""
    clock = ManualClock()
    node = Node(Settings(node_id=1), clock)
    node.routing = routing = ClusterRouting(
        node_id=1,
        partitions=2,
        owners={0: 1, 1: 2},
        live={n: NodeAddress(n, {"PLAINTEXT": (f"node{n}", 9092)}) for n in (1, 2)},
        mine={0: PartitionState.OWNED},
        settled={1, 2},
        lease_valid_until_ms=clock.now_ms() + 1000,
    )
    group = next(g for g in (f"g{i}" for i in range(100)) if routing.partition_of(g) == 0)
    assert coordinator(node, group) == {"node_id": 1, "this": True, "console_url": None}
    clock.advance(1000)
    state = ConsoleState(node, Activity(clock.now_ms), lambda: 0)
    nodes = overview(state, Viewer(ANONYMOUS, "/127.0.0.1"))["nodes"]
    assert [(n["node_id"], n["this"]) for n in nodes] == [(2, False)]
    assert coordinator(node, group) == {"node_id": 2, "this": False, "console_url": None}


def test_the_memory_of_rebalances_is_bounded_and_forgets_deleted_groups() -> None:
    clock = ManualClock()
    activity = Activity(clock.now_ms)
    trigger = events.RebalanceTrigger.NEW_MEMBER
    for generation in range(REBALANCES_PER_GROUP + 5):
        activity(events.RebalanceStarted("g", generation, "a member joined", trigger))
        clock.advance(10)
        activity(events.JoinCompleted("g", generation + 1, 1, "m", "range", 10))
        activity(events.StateChanged("g", "PreparingRebalance", "CompletingRebalance"))
        clock.advance(5)
        activity(events.StateChanged("g", "CompletingRebalance", "Stable"))
        activity(events.SyncCompleted("g", generation + 1, 5, 15, "consumer", ()))
        clock.advance(1000)
    g = activity.group("g")
    assert g is not None and len(g.rebalances) == REBALANCES_PER_GROUP
    last = g.rebalances[-1].as_dict()
    assert (last["join_ms"], last["sync_ms"], last["duration_ms"], last["outcome"]) == (
        10,
        5,
        15,
        "Stable",
    )
    assert g.starts_since(clock.now_ms() - 3_600_000) == REBALANCES_PER_GROUP + 5
    assert activity.rebalances_last_hour(clock.now_ms()) == REBALANCES_PER_GROUP + 5
    activity(events.GroupDeleted("g", "DeleteGroups"))
    assert activity.group("g") is None


def test_a_kip848_rebalance_names_who_joined_and_absorbs_a_bump_before_its_target() -> None:
    """Two members join before the target is computed: one rebalance (the target serves
    both), not a "restarted" row that made no epoch; each join is named."""
    clock = ManualClock()
    activity = Activity(clock.now_ms)
    new = events.RebalanceTrigger.NEW_MEMBER
    for epoch, member in enumerate(("m-1", "m-2")):
        activity(events.MemberJoined("k", member, None, "app", "/h", []))
        activity(events.RebalanceStarted("k", epoch, "a new member joined", new))
        clock.advance(2)
    activity(events.TargetAssignmentComputed("k", 2, "uniform", 2, 2))
    clock.advance(30)
    activity(events.StateChanged("k", "Reconciling", "Stable"))
    g = activity.group("k")
    assert g is not None
    (only,) = [r.as_dict() for r in g.rebalances]
    assert (only["from_generation"], only["generation"], only["members"]) == (0, 2, 2)
    assert (only["outcome"], only["duration_ms"], only["trigger"]) == ("Stable", 34, "new_member")
    assert only["member"] == "m-1"
    assert only["reason"] == "a new member joined; a new member joined (m-2)"
    # A classic restart (the same generation replaced) stays a row of its own.
    activity(events.MemberJoined("c", "c-1", None, "app", "/h", ["range"]))
    activity(events.RebalanceStarted("c", 3, "adding new member c-1", new))
    activity(events.RebalanceStarted("c", 3, "adding new member c-2", new))
    c = activity.group("c")
    assert c is not None and [r.outcome for r in c.rebalances] == ["restarted", "in progress"]
    assert c.rebalances[0].member is None  # its reason names it already
