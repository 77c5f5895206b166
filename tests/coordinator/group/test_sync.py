"""SyncGroup and the sync timer (spec 4.4, 4.6)."""

from __future__ import annotations

import pytest

from coordinator.group.classic.states import DEAD, GroupState
from coordinator.group.deadlines import sync_key
from coordinator.group.records import GroupMetadataRecord
from coordinator.group.requests import SyncGroupInput
from coordinator.group.results import SyncGroupResult
from protocol.errors import ErrorCode

from .harness import GROUP, Harness


def completing(h: Harness, count: int = 2, **kw: int) -> list[str]:
    """``count`` members through the join phase; leader first."""
    tokens = [h.join(**kw) for _ in range(count)]  # type: ignore[arg-type]
    while any(h.result(t) is None for t in tokens):
        h.advance(3000)
    results = [h.join_result(t) for t in tokens]
    leader = results[0].leader
    return sorted((r.member_id for r in results), key=lambda m: m != leader)


@pytest.mark.parametrize(("ptype", "pname"), [("connect", None), (None, "roundrobin")])
def test_sync_with_inconsistent_protocol_type_or_name_is_rejected(ptype, pname):
    h = Harness()
    (leader,) = completing(h, 1)
    token = h.sync(leader, 1, protocol_type=ptype, protocol_name=pname)
    assert h.sync_result(token).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize(("ptype", "pname"), [(None, None), ("consumer", "range")])
def test_sync_with_consistent_or_absent_protocol_succeeds(ptype, pname):
    h = Harness()
    (leader,) = completing(h, 1)
    r = h.sync_result(
        h.sync(leader, 1, None, [(leader, b"a")], protocol_type=ptype, protocol_name=pname)
    )
    assert (r.error_code, r.protocol_type, r.protocol_name, r.assignment) == (
        0,
        "consumer",
        "range",
        b"a",
    )


def test_sync_v5_without_protocol_type_or_name_is_rejected_before_the_group_is_checked():
    h = Harness()
    assert (
        h.sync_result(h.sync("m", 1, group="", protocol_type=None, version=5)).error_code
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )


def test_sync_with_empty_group_id_is_invalid():
    h = Harness()
    assert h.sync_result(h.sync("m", 1, group="")).error_code == ErrorCode.INVALID_GROUP_ID


def test_sync_to_unknown_group_is_unknown_member():
    h = Harness()
    assert h.sync_result(h.sync("m", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_from_unknown_member_is_unknown_member():
    h = Harness()
    completing(h, 1)
    assert h.sync_result(h.sync("stranger", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_with_illegal_generation():
    h = Harness()
    (leader,) = completing(h, 1)
    assert h.sync_result(h.sync(leader, 2)).error_code == ErrorCode.ILLEGAL_GENERATION


def test_sync_to_dead_group_is_coordinator_not_available():
    h = Harness()
    (leader,) = completing(h, 1)
    h.group().transition(DEAD, h.now)
    assert h.sync_result(h.sync(leader, 1)).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_sync_to_empty_group_is_unknown_member():
    h = Harness()
    (leader,) = completing(h, 1)
    h.leave(leader)
    assert h.sync_result(h.sync(leader, 2)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_during_preparing_rebalance_is_rebalance_in_progress():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    h.join(leader)
    assert h.sync_result(h.sync(follower, generation)).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_follower_missing_from_the_assignment_gets_empty_bytes():
    h = Harness()
    leader, follower = completing(h)
    h.sync(leader, 1, None, [(leader, b"l"), ("unknown", b"ignored")])
    r = h.sync_result(h.sync(follower, 1))
    assert (r.error_code, r.assignment) == (ErrorCode.NONE, b"")


def test_follower_sync_after_leader_is_answered_at_once():
    h = Harness()
    leader, follower = completing(h)
    leader_sync = h.sync(leader, 1, None, [(leader, b"l"), (follower, b"f")])
    assert h.sync_result(leader_sync).assignment == b"l"
    assert h.group().state == GroupState.STABLE
    assert h.sync_result(h.sync(follower, 1)).assignment == b"f"


def test_follower_sync_before_leader_parks_until_the_assignment_arrives():
    h = Harness()
    leader, follower = completing(h)
    follower_sync = h.sync(follower, 1)
    assert h.result(follower_sync) is None
    before = len(h.records)
    leader_sync = h.sync(leader, 1, None, [(leader, b"l"), (follower, b"f")])
    assert h.sync_result(follower_sync) == SyncGroupResult(
        ErrorCode.NONE, "consumer", "range", b"f"
    )
    assert h.sync_result(leader_sync).assignment == b"l"
    # The assignment is persisted in the same Effects (written before the replies go out).
    (snapshot,) = h.records[before:]
    assert isinstance(snapshot, GroupMetadataRecord) and snapshot.state == "Stable"
    assert {m.member_id: m.assignment for m in snapshot.members} == {leader: b"l", follower: b"f"}


def test_leader_failure_during_sync_sends_parked_followers_back_to_join():
    h = Harness()
    leader, follower = completing(h, session=10000)
    follower_sync = h.sync(follower, 1)
    h.advance(10000)  # the leader never syncs nor heartbeats
    assert h.sync_result(follower_sync).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert leader not in h.group().members
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_repeated_sync_answers_the_earlier_one():
    h = Harness()
    leader, follower = completing(h)
    first = h.sync(follower, 1)
    second = h.sync(follower, 1)
    assert h.sync_result(first).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    h.sync(leader, 1, None, [(follower, b"f")])
    assert h.sync_result(second).assignment == b"f"


def test_rebalance_times_out_when_no_member_syncs():
    h = Harness()
    completing(h, session=20000, rebalance=8000)
    h.advance(8000)
    g = h.group()
    assert (g.state, len(g.members), g.generation_id) == (GroupState.EMPTY, 0, 2)


def test_rebalance_times_out_when_followers_do_not_sync():
    h = Harness()
    leader, follower = completing(h, session=20000, rebalance=8000)
    h.sync(leader, 1, None, [(leader, b"l"), (follower, b"f")])
    h.advance(7999)
    assert h.group().state == GroupState.STABLE
    h.advance(1)
    assert set(h.group().members) == {leader}
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_rebalance_times_out_when_the_leader_does_not_sync():
    h = Harness()
    _leader, follower = completing(h, session=20000, rebalance=8000)
    follower_sync = h.sync(follower, 1)
    h.advance(8000)
    assert h.sync_result(follower_sync).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert set(h.group().members) == {follower}


def test_rebalance_does_not_time_out_when_everyone_synced():
    h = Harness()
    leader, follower = completing(h, session=20000, rebalance=8000)
    h.sync(follower, 1)
    h.sync(leader, 1, None, [(leader, b"l"), (follower, b"f")])
    assert h.co.timer_deadline(sync_key(GROUP)) is None
    h.advance(8000)
    assert h.group().state == GroupState.STABLE


def test_stale_sync_timer_of_an_older_generation_is_ignored():
    h = Harness()
    leader, follower = completing(h, session=20000, rebalance=8000)
    key = sync_key(GROUP)
    h.sync(leader, 1, None, [])
    # Force a firing armed for generation 1 after the group moved on to generation 2.
    h.join(leader, session=20000, rebalance=8000)
    h.join(follower, session=20000, rebalance=8000)
    assert h.group().generation_id == 2
    armed = h.co.timer_deadline(key)
    assert armed is not None  # armed for generation 2
    effects = h.co.fire_timer(key, armed - 1)
    assert effects.replies == effects.events == []


def test_v5_sync_reaches_the_coordinator_input_unchanged():
    # The server passes api_version; type/name null at v5+ is the state machine's call.
    h = Harness()
    (leader,) = completing(h, 1)
    req = SyncGroupInput(GROUP, 1, leader, None, None, "range", [], 5)
    effects = h.apply(h.co.sync_group("t", req, h.now))
    assert effects.replies == [("t", SyncGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))]


def test_leader_sync_without_assignments_gives_empty_bytes_and_a_stable_group():
    # Kafka: testSyncGroupEmptyAssignment
    h = Harness()
    (leader,) = completing(h, 1)
    r = h.sync_result(h.sync(leader, 1, None, []))
    assert (r.error_code, r.assignment) == (ErrorCode.NONE, b"")
    assert h.group().state == GroupState.STABLE
    assert h.heartbeat(leader, 1) == ErrorCode.NONE


def test_new_generation_waits_only_for_the_syncs_of_its_own_members():
    # Kafka: testNewGenerationClearsPendingSyncMembers
    h = Harness()
    leader, follower = completing(h, session=20000, rebalance=8000)
    assert h.group().pending_sync_members == {leader, follower}
    # Neither synced generation 1; the leader rejoins, the follower never comes back.
    token = h.join(leader, session=20000, rebalance=8000, protocols=[("range", b"changed")])
    assert h.group().pending_sync_members == set()
    h.advance(8000)
    assert h.join_result(token).generation_id == 2
    assert h.group().pending_sync_members == {leader}
    h.sync(leader, 2, None, [(leader, b"l")])
    assert h.co.timer_deadline(sync_key(GROUP)) is None
    h.advance(7999)
    assert h.heartbeat(leader, 2) == ErrorCode.NONE
    h.advance(8000)
    assert (h.group().state, set(h.group().members)) == (GroupState.STABLE, {leader})
