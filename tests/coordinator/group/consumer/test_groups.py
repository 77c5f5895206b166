"""Consumer groups beside classic groups: one namespace of ids, offsets with member epochs,
ListGroups and DeleteGroups."""

from __future__ import annotations

from coordinator.group import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.group.consumer.requests import ConsumerHeartbeatInput
from coordinator.group.events import StateChanged
from protocol.errors import ErrorCode

from .harness import ConsumerHarness

OFFSET = {("orders", 0): 42}


def test_a_member_commits_at_its_epoch_and_the_offsets_are_fetched() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    assert h.commit(OFFSET, member_id="a", generation=1, version=9) == {("orders", 0): 0}
    fetched = h.co.fetch_offsets("group", [("orders", [0])], h.now, member_id="a", member_epoch=1)
    assert fetched.error_code == 0
    assert fetched.topics[0].partitions[0].offset == 42
    # Without a member (an admin client, a fresh consumer's first fetch) too.
    assert h.co.fetch_offsets("group", None, h.now).topics[0].partitions[0].offset == 42


def test_commits_and_fetches_check_the_member_and_its_epoch() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    stale = ErrorCode.STALE_MEMBER_EPOCH
    assert h.commit(OFFSET, member_id="a", generation=0, version=9) == {("orders", 0): stale}
    unknown = ErrorCode.UNKNOWN_MEMBER_ID
    assert h.commit(OFFSET, member_id="z", generation=1, version=9) == {("orders", 0): unknown}
    assert h.commit(OFFSET, generation=-1, version=9) == {("orders", 0): unknown}
    old = ErrorCode.UNSUPPORTED_VERSION
    assert h.commit(OFFSET, member_id="a", generation=1, version=8) == {("orders", 0): old}
    fetched = h.co.fetch_offsets("group", None, h.now, member_id="a", member_epoch=7)
    assert fetched.error_code == stale
    fetched = h.co.fetch_offsets("group", None, h.now, member_id="z", member_epoch=1)
    assert fetched.error_code == unknown


def test_an_empty_consumer_group_takes_commits_without_a_member() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    a.leave()
    assert h.commit(OFFSET, generation=-1, version=9) == {("orders", 0): 0}


def test_a_classic_join_to_a_consumer_group_is_refused_until_it_is_empty() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    assert h.join_result(h.join()).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.commit(OFFSET, member_id="a", generation=1, version=9)
    a.leave()
    token = h.join()
    h.advance(h.config.initial_rebalance_delay_ms)
    assert h.join_result(token).error_code == 0  # the empty group became a classic one
    assert h.co.consumer_group("group") is None
    assert h.co.fetch_offsets("group", None, h.now).topics[0].partitions[0].offset == 42


def test_a_consumer_heartbeat_to_a_classic_group_is_group_id_not_found() -> None:
    """With migration disabled (test_migration.py: the policies)."""
    disabled = ConsumerGroupConfig(migration_policy="disabled", assignment_interval_ms=0)
    h = ConsumerHarness(config=GroupConfig(consumer=disabled))
    h.stable_group(2)
    r = h.member("a").join()
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert r.error_message == "Group group is not a consumer group."


def test_an_empty_classic_group_with_offsets_becomes_a_consumer_group() -> None:
    h = ConsumerHarness()
    h.commit(OFFSET)  # a simple group, holding offsets only
    assert h.member("a").join().error_code == 0
    fetched = h.co.fetch_offsets("group", None, h.now, member_id="a", member_epoch=1)
    assert fetched.topics[0].partitions[0].offset == 42


def test_list_groups_says_consumer_and_filters_by_type_and_state() -> None:
    h = ConsumerHarness()
    h.member("a").join()
    h.commit(OFFSET, member_id="a", generation=1, version=9)
    listed = h.co.list_groups([], [])
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == [
        ("group", "consumer", "consumer", "Stable")
    ]
    assert h.co.list_groups([], ["classic"]) == []
    assert len(h.co.list_groups(["stable"], ["Consumer"])) == 1
    assert h.co.list_groups(["empty"], []) == []


def test_describe_groups_does_not_describe_a_consumer_group() -> None:
    h = ConsumerHarness()
    h.member("a").join()
    assert h.co.describe_groups(["group"])[0].group_state == "Dead"


def test_delete_groups_refuses_a_group_with_members_and_deletes_an_empty_one() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    h.commit(OFFSET, member_id="a", generation=1, version=9)
    errors, _ = h.delete_groups("group")
    assert errors[0].error_code == ErrorCode.NON_EMPTY_GROUP
    a.leave()
    errors, _ = h.delete_groups("group")
    assert errors[0].error_code == 0
    assert h.co.consumer_group("group") is None
    assert h.co.fetch_offsets("group", None, h.now).topics == []


def test_subscribed_topics_offsets_cannot_be_deleted() -> None:
    h = ConsumerHarness(topics={"orders": 6, "old": 1})
    h.member("a").join()
    h.commit({("orders", 0): 1, ("old", 0): 2}, member_id="a", generation=1, version=9)
    error, errors, _ = h.delete_offsets([("orders", [0]), ("old", [0])])
    assert error == 0
    assert errors == {("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): 0}


def test_a_timer_of_a_removed_member_changes_nothing() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    a.leave()
    h.advance(60000)
    assert h.co.consumer_group("group").group_epoch == 2
    assert not h.timers
    assert h.send(ConsumerHeartbeatInput("group", "a", 1, owned={})).error_code == (
        ErrorCode.UNKNOWN_MEMBER_ID
    )


def test_offsets_of_subscribed_topics_do_not_expire_and_an_empty_group_goes() -> None:
    h = ConsumerHarness(topics={"orders": 6, "old": 1})
    a = h.member("a")
    a.join()
    h.commit({("orders", 0): 1, ("old", 0): 2}, member_id="a", generation=1, version=9)
    retention = 60000
    for _ in range(13):  # 65 s, heartbeating
        h.advance(5000)
        a.beat()
    h.apply(h.co.expire_offsets(h.now, retention))
    fetched = h.co.fetch_offsets("group", None, h.now)
    assert [(t.topic, t.partitions[0].offset) for t in fetched.topics] == [("orders", 1)]
    a.leave()
    h.advance(retention + 1)
    h.apply(h.co.expire_offsets(h.now, retention))
    assert "group" not in h.co.groups


def test_offset_delete_on_a_group_that_never_committed() -> None:
    h = ConsumerHarness(topics={"orders": 6, "old": 1})
    h.member("a").join()
    error, errors, _ = h.delete_offsets([("orders", [0]), ("old", [0])])
    assert error == 0
    assert errors == {("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): 0}


def test_state_changes_are_reported() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    a.beat()
    a.beat()
    b.beat()
    a.leave()
    b.leave()
    changes = [(e.old_state, e.new_state) for e in h.events if isinstance(e, StateChanged)]
    assert changes == [
        ("Empty", "Assigning"),  # a joined: its target is computed when the turn ends
        ("Assigning", "Stable"),
        ("Stable", "Assigning"),
        ("Assigning", "Reconciling"),  # b waits for a's partitions
        ("Reconciling", "Stable"),
        ("Stable", "Assigning"),  # a left: a new target is due
        ("Assigning", "Empty"),
    ]


def test_classic_requests_to_a_consumer_group_are_unknown_members() -> None:
    h = ConsumerHarness()
    h.member("a").join()
    h.commit(OFFSET, member_id="a", generation=1, version=9)  # its offsets' group exists too
    assert h.heartbeat("a", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync("a", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    [left] = h.leave("a").members
    assert left.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert "a" in h.co.consumer_group("group").members


def test_consumer_group_describe_shows_epochs_members_and_assignments() -> None:
    h = ConsumerHarness()
    a, b = h.member("a", assignor="range"), h.member("b", instance_id="i-b")
    a.join()
    b.join()
    [d] = h.co.consumer_group_describe(["group"])
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch) == (
        0,
        "Reconciling",
        2,
        2,
    )
    assert d.assignor_name == "range"
    by_id = {m.member_id: m for m in d.members}
    assert by_id["a"].assignment == {"orders": [0, 1, 2, 3, 4, 5]}  # still revoking
    assert by_id["b"].assignment == {} and by_id["b"].instance_id == "i-b"
    assert by_id["a"].target_assignment == {"orders": [0, 1, 2]}
    assert by_id["b"].target_assignment == {"orders": [3, 4, 5]}
    assert by_id["b"].member_epoch == 2 and by_id["a"].member_epoch == 1


def test_consumer_group_describe_of_other_groups() -> None:
    h = ConsumerHarness()
    h.stable_group(1)
    classic, unknown = h.co.consumer_group_describe(["group", "nobody"])
    assert (classic.error_code, classic.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group group is not a consumer group.",
    )
    assert (unknown.error_code, unknown.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )


def test_max_groups_counts_every_kind_of_group_alike() -> None:
    """One consumer group with offsets is one group: a second group of either kind fits
    under max_groups=2, a third of either kind does not."""
    consumer = ConsumerGroupConfig(assignment_interval_ms=0)
    h = ConsumerHarness(
        config=GroupConfig(initial_rebalance_delay_ms=0, max_groups=2, consumer=consumer)
    )
    a = h.member("a")
    a.join()
    assert h.commit(OFFSET, member_id="a", generation=1, version=9) == {("orders", 0): 0}
    assert h.member("b", group="second").join().error_code == ErrorCode.NONE
    refused = h.member("c", group="third").join()
    assert refused.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.join_result(h.join(group="third")).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.commit(OFFSET, group="third") == {("orders", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert sorted(h.co.groups) == ["group", "second"]


def test_consumer_group_describe_counts_partitions_being_revoked_as_the_members() -> None:
    """KAFKA-20431 (Kafka 4.3): a member still holds what it is revoking."""
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    a.beat()  # told to give up 3-5: it is revoking them (UNREVOKED_PARTITIONS)
    [d] = h.co.consumer_group_describe(["group"])
    by_id = {m.member_id: m for m in d.members}
    assert by_id["a"].assignment == {"orders": [0, 1, 2, 3, 4, 5]}
    a.beat()  # reports them revoked
    [d] = h.co.consumer_group_describe(["group"])
    assert {m.member_id: m for m in d.members}["a"].assignment == {"orders": [0, 1, 2]}
