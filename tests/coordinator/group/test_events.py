"""Events say why a rebalance started, how a member went, and how long each phase took."""

from __future__ import annotations

from coordinator.group import GroupConfig
from coordinator.group.events import (
    JoinCompleted,
    MemberRemoved,
    RebalanceStarted,
    RebalanceTrigger,
    RemovalCause,
    SyncCompleted,
)
from coordinator.group.requests import LeaveGroupInput, LeavingMember

from .harness import Harness


def _of(h: Harness, kind: type) -> list:
    return [e for e in h.events if isinstance(e, kind)]


def test_first_rebalance_is_triggered_by_a_new_member_and_timed_per_phase():
    h = Harness(GroupConfig(initial_rebalance_delay_ms=3000))
    a = h.join()
    h.advance(3000)
    leader = h.join_result(a).member_id
    h.advance(250)
    h.sync(leader, 1, None, [(leader, b"assignment")])
    (started,) = _of(h, RebalanceStarted)
    assert started.trigger is RebalanceTrigger.NEW_MEMBER
    (joined,) = _of(h, JoinCompleted)
    assert (joined.members, joined.duration_ms) == (1, 3000)
    (synced,) = _of(h, SyncCompleted)
    assert (synced.duration_ms, synced.rebalance_duration_ms) == (250, 3250)
    assert synced.protocol_type == "consumer"
    assert synced.assignments == ((leader, b"assignment"),)


def test_leave_carries_the_client_reason_and_triggers_member_left():
    h = Harness()
    (_leader, follower), _ = h.stable_group(2)
    token = h._token()
    h.apply(
        h.co.leave_group(
            token, LeaveGroupInput("group", [LeavingMember(follower, None, "bye")]), h.now
        )
    )
    (removed,) = _of(h, MemberRemoved)
    assert (removed.member_id, removed.cause, removed.client_reason) == (
        follower,
        RemovalCause.LEFT,
        "bye",
    )
    assert not removed.cause.expired
    assert _of(h, RebalanceStarted)[-1].trigger is RebalanceTrigger.MEMBER_LEFT


def test_session_expiry_names_its_timer_and_triggers_member_expired():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=10000)
    for _ in range(3):
        h.advance(4000)
        h.heartbeat(leader, generation)
    (removed,) = _of(h, MemberRemoved)
    assert (removed.member_id, removed.cause) == (follower, RemovalCause.SESSION_TIMEOUT)
    assert removed.cause.expired
    assert _of(h, RebalanceStarted)[-1].trigger is RebalanceTrigger.MEMBER_EXPIRED


def test_member_that_does_not_rejoin_is_removed_by_the_rebalance_timeout():
    h = Harness()
    (leader, follower), _ = h.stable_group(2, session=60000, rebalance=20000)
    h.join(
        leader, session=60000, rebalance=20000
    )  # the leader asks for a new generation; the follower never rejoins
    assert _of(h, RebalanceStarted)[-1].trigger is RebalanceTrigger.MEMBER_REJOINED
    h.advance(20000)
    (removed,) = _of(h, MemberRemoved)
    assert (removed.member_id, removed.cause) == (follower, RemovalCause.REBALANCE_TIMEOUT)
    assert _of(h, JoinCompleted)[-1].duration_ms == 20000
