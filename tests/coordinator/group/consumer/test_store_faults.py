"""A consumer group is held to the classic groups' rule (group/durability.py): answers
wait until the group's records are stored, and a failed write rolls the group back, so
nobody sees an epoch or assignment that a restart would not load."""

from __future__ import annotations

from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.requests import ConsumerHeartbeatResult
from coordinator.group.events import GroupReverted
from protocol.errors import ErrorCode

from .harness import GROUP, ConsumerHarness, settle


def _reloaded(h: ConsumerHarness) -> ConsumerGroup | None:
    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(h.stored, again.now))
    return again.co.consumer_group(GROUP)


def _picture(g: ConsumerGroup | None) -> object:
    """What clients can be told of a group: epochs, targets and assignments."""
    if g is None:
        return None
    return (
        g.group_epoch,
        g.assignment_epoch,
        {
            m.member_id: (
                m.member_epoch,
                m.assigned,
                m.pending_revocation,
                g.target.get(m.member_id),
            )
            for m in g.members.values()
        },
    )


def _answer(h: ConsumerHarness, token: int) -> ConsumerHeartbeatResult:
    result = h.replies[token]
    assert isinstance(result, ConsumerHeartbeatResult)
    return result


def test_a_heartbeat_is_answered_once_what_it_shows_is_stored() -> None:
    h = ConsumerHarness(store_at_once=False)
    a = h.member("a")
    token = h.send_held(a.request(full=True))
    assert token not in h.replies  # its epoch and assignment are not stored yet
    while h.writes:
        h.store()
    assert _answer(h, token).member_epoch == 1
    assert _picture(_reloaded(h)) == _picture(h.co.consumer_group(GROUP))


def test_another_members_heartbeat_waits_for_the_target_it_was_computed_with() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    h.store_at_once = False
    b = h.member("b")
    joined = h.send_held(b.request(full=True))  # bumps the epoch: a new target, in flight
    beat = h.send_held(a.request())  # a is told to revoke, from that unstored target
    assert joined not in h.replies and beat not in h.replies
    while h.writes:
        h.store()
    assert b.answered(_answer(h, joined)).error_code == 0
    assert a.answered(_answer(h, beat)).error_code == 0
    assert b.epoch == 2
    assert len(a.partitions()) == 3  # a gives up half, as the stored target says


def test_a_failed_write_is_answered_retriably_and_rolls_the_group_back() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    settle([a])
    before = _picture(h.co.consumer_group(GROUP))
    h.store_at_once = False
    b = h.member("b")
    joined = h.send_held(b.request(full=True))
    beat = h.send_held(a.request())
    h.store(ok=False)  # b's join was not stored
    while h.writes:
        h.store()  # what a's heartbeat wrote lands after the rollback
    # Both are told to retry (Kafka's answer to a failed append), not what was lost.
    assert _answer(h, joined).error_code == ErrorCode.NOT_COORDINATOR
    assert _answer(h, beat).error_code == ErrorCode.NOT_COORDINATOR
    assert any(isinstance(e, GroupReverted) for e in h.events)
    g = h.co.consumer_group(GROUP)
    assert g is not None and "b" not in g.members
    assert _picture(g) == before
    # Memory and the store agree: a restart loads exactly what anyone can be told.
    assert _picture(_reloaded(h)) == before
    # The members carry on from what was stored: a at its epoch, b joins afresh.
    h.store_at_once = True
    assert a.beat().error_code == 0
    assert b.join().error_code == 0
    settle([a, b])
    assert _picture(_reloaded(h)) == _picture(h.co.consumer_group(GROUP))


def test_a_group_whose_first_write_fails_is_forgotten() -> None:
    h = ConsumerHarness(store_at_once=False)
    a = h.member("a")
    token = h.send_held(a.request(full=True))
    h.store(ok=False)
    assert _answer(h, token).error_code == ErrorCode.NOT_COORDINATOR
    assert h.co.consumer_group(GROUP) is None and not h.timers
    h.store_at_once = True
    assert a.join().error_code == 0


def test_a_consumer_group_whose_deletion_fails_comes_back_with_its_offsets() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    assert h.commit({("orders", 0): 42}, member_id="a", generation=1, version=9) == {
        ("orders", 0): 0
    }
    a.leave()
    h.store_at_once = False
    errors, _ = h.delete_groups(GROUP)
    assert errors is None  # answered once the deletion is stored
    assert h.co.groups == {}
    h.store(ok=False)
    assert isinstance(h.co.groups.get(GROUP), ConsumerGroup)
    fetched = h.co.fetch_offsets(GROUP, None, h.now)
    assert fetched.topics[0].partitions[0].offset == 42
