"""What the group core publishes of a group for readers outside it (the console's group
page): one view for every kind, with what only the core knows - the assignments as
DescribeGroups shows them, and when a KIP-848 member last heartbeated (its session timer)."""

from __future__ import annotations

from coordinator.group.model import CLASSIC, CONSUMER

from .consumer.harness import ConsumerHarness
from .harness import GROUP, Harness


def test_a_classic_group_is_seen_with_its_generation_leader_and_heartbeats():
    h = Harness()
    (leader, other), generation = h.stable_group(2)
    h.advance(3000)
    assert h.heartbeat(other, generation) == 0
    view = h.co.group_view(GROUP)
    assert view is not None
    assert (view.group_type, view.state, view.generation) == (CLASSIC, "Stable", generation)
    assert view.leader == leader and view.heartbeat_interval_ms is None
    members = {m.member_id: m for m in view.members}
    assert members[leader].leader and not members[other].leader
    assert members[other].last_heartbeat_ms == h.now
    assert members[leader].last_heartbeat_ms == h.now - 3000
    # The stored assignment, as DescribeGroups shows it.
    assert members[other].assignment_bytes == len(f"assignment-{other}".encode())
    assert members[other].epoch is None


def test_a_consumer_group_member_is_seen_with_its_last_heartbeat_from_its_session():
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    h.advance(4000)
    a.beat()
    view = h.co.group_view(GROUP)
    assert view is not None
    assert view.group_type == CONSUMER and view.generation == view.assignment_epoch == 1
    (member,) = view.members
    assert member.last_heartbeat_ms == h.now
    assert member.epoch == 1 and member.protocol == "consumer"
    assert member.assignment == {"orders": list(range(6))} == member.target
    assert view.heartbeat_interval_ms == h.config.consumer.heartbeat_interval_ms


def test_no_view_of_a_group_that_does_not_exist():
    assert Harness().co.group_view("nobody") is None
