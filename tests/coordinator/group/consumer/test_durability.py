"""Consumer groups are stored as snapshots after each change and come back from them."""

from __future__ import annotations

from coordinator.group.consumer.member import MemberState
from coordinator.group.consumer.requests import ConsumerHeartbeatInput
from coordinator.group.records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    GroupDeletedRecord,
)
from protocol.errors import ErrorCode

from .harness import ConsumerHarness, settle


def consumer_records(h: ConsumerHarness) -> list[object]:
    kinds = (ConsumerGroupRecord, ConsumerMemberRecord, ConsumerMemberRemovedRecord)
    return [r for r in h.records if isinstance(r, kinds)]


def test_what_changed_is_stored_and_a_plain_heartbeat_stores_nothing() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    # The join (epoch 1, the new member), then the target computed for it (coalesce.py):
    # the group's epochs, and the member with its target and what it was given.
    written = consumer_records(h)
    assert [type(r).__name__ for r in written] == [
        "ConsumerGroupRecord",
        "ConsumerMemberRecord",
        "ConsumerGroupRecord",
        "ConsumerMemberRecord",
    ]
    group, member = written[2:]
    assert isinstance(group, ConsumerGroupRecord) and isinstance(member, ConsumerMemberRecord)
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    assert member.assigned == member.target == {"orders": [0, 1, 2, 3, 4, 5]}
    a.beat()
    a.beat()
    assert len(consumer_records(h)) == 4  # nothing changed: nothing written
    b = h.member("b")
    b.join()
    a.beat()  # a is told to revoke: only a's record
    written = consumer_records(h)[4:]
    assert [type(r).__name__ for r in written] == [
        "ConsumerGroupRecord",  # epoch 2
        "ConsumerMemberRecord",  # b, new
        "ConsumerGroupRecord",  # the target assignment of epoch 2
        "ConsumerMemberRecord",  # a's new target
        "ConsumerMemberRecord",  # b's target, and b at epoch 2
        "ConsumerMemberRecord",  # a, revoking
    ]
    b.leave()
    assert isinstance(consumer_records(h)[-2], ConsumerMemberRemovedRecord)


def test_a_reloaded_group_carries_on_at_the_same_epochs() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    a.beat()  # a is now revoking three partitions
    h.commit({("orders", 0): 5}, member_id="b", generation=2, version=9)

    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(h.records, again.now))
    g = again.co.consumer_group("group")
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    assert g.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    a.h = b.h = again
    settle([a, b])  # both go on where they were: no fencing, nothing lost
    assert a.last is not None and a.last.error_code == 0
    assert len(a.partitions()) == len(b.partitions()) == 3
    fetched = again.co.fetch_offsets("group", None, again.now, member_id="b", member_epoch=2)
    assert fetched.topics[0].partitions[0].offset == 5


def test_reloaded_members_get_a_whole_session_from_the_load() -> None:
    h = ConsumerHarness()
    h.member("a").join()
    again = ConsumerHarness(topics=dict(h.topics), now=30000)
    again.apply(again.co.load(h.records, again.now))
    again.advance(44999)
    assert "a" in again.co.consumer_group("group").members
    again.advance(1)
    assert "a" not in again.co.consumer_group("group").members
    r = again.send(ConsumerHeartbeatInput("group", "a", 1, owned={}))
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_deleted_consumer_group_stays_deleted() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    a.leave()
    h.delete_groups("group")
    # The group's own records go, and (as any group's) its offsets with the tombstone.
    assert [type(r) for r in h.records[-2:]] == [ConsumerGroupDeletedRecord, GroupDeletedRecord]
    again = ConsumerHarness()
    again.apply(again.co.load(h.records, again.now))
    assert not again.co.groups


def test_a_reloaded_regex_subscription_matches_topics_created_since() -> None:
    h = ConsumerHarness(topics={"orders-eu": 2})
    a = h.member("a", topics=[])
    a.regex = "orders-.*"
    a.join()
    again = ConsumerHarness(topics={"orders-eu": 2, "orders-us": 1})
    again.apply(again.co.load(h.records, again.now))
    a.h = again
    assert a.beat().member_epoch == 2
    assert ("orders-us", 0) in a.partitions()


def test_an_unloaded_group_stops_and_another_node_carries_it_on() -> None:
    """A cluster node losing the group's coordinator partition drops it and its timers;
    the node taking the partition over loads it from the shared store."""
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    h.apply(h.co.unload(lambda group_id: group_id == "group", h.now))
    assert not h.co.groups and not h.timers
    other = ConsumerHarness(now=h.now)
    other.apply(other.co.load(h.records, other.now, fresh_sessions=True))
    a.h = other
    assert a.beat().error_code == 0 and a.epoch == 1 and len(a.partitions()) == 6
