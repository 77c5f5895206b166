"""Static membership (KIP-345, KIP-814; spec 4.7)."""

from __future__ import annotations

import pytest

from coordinator.group.classic.states import DEAD, EMPTY, PREPARING_REBALANCE, GroupState
from coordinator.group.deadlines import join_key
from coordinator.group.records import GroupMetadataRecord
from coordinator.group.results import MemberError, MemberMetadata
from protocol.errors import ErrorCode

from .harness import GROUP, Harness

LEADER, FOLLOWER = "instance-0", "instance-1"


def static_group(h: Harness, **kw: int) -> tuple[str, str, int]:
    (leader, follower), generation = h.stable_group(2, static=True, **kw)
    return leader, follower, generation


def test_static_member_joining_first_is_added_without_member_id_required():
    h = Harness()
    token = h.join(instance="a", version=7)
    h.advance(3000)
    r = h.join_result(token)
    assert (r.error_code, r.member_id, r.leader) == (ErrorCode.NONE, "a-1", "a-1")
    assert r.members == [MemberMetadata("a-1", "a", b"range-metadata")]


def test_static_member_with_an_unknown_member_id_is_fenced():
    h = Harness()
    static_group(h)
    r = h.join_result(h.join("unknown-member", FOLLOWER))
    assert (r.error_code, r.member_id) == (ErrorCode.FENCED_INSTANCE_ID, "unknown-member")


def test_static_member_joining_twice_fences_the_first_join():
    h = Harness()
    first = h.join(instance="a", session=6000)
    second = h.join(instance="a", session=6000)
    r = h.join_result(first)
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (
        ErrorCode.FENCED_INSTANCE_ID,
        "a-1",
        -1,
        "",
    )
    assert (r.protocol_type, r.protocol_name) == (None, None)
    g = h.group()
    assert (len(g.members), g.num_members_awaiting_join) == (1, 1)
    h.advance(3000)
    assert h.join_result(second).member_id == "a-2"


def test_old_follower_rejoining_is_fenced_when_a_duplicate_joins():
    h = Harness()
    _leader, follower, _ = static_group(h)
    h.join()  # a third member: rebalance
    old = h.join(follower, FOLLOWER)
    assert h.result(old) is None
    h.join(instance=FOLLOWER)
    r = h.join_result(old)
    assert (r.error_code, r.member_id, r.generation_id) == (
        ErrorCode.FENCED_INSTANCE_ID,
        follower,
        -1,
    )
    assert h.group().state is PREPARING_REBALANCE


def test_syncing_follower_is_fenced_when_its_instance_rejoins():
    h = Harness()
    _a, b = h.join(instance=LEADER), h.join(instance=FOLLOWER)
    h.advance(6000)
    follower = h.join_result(b).member_id
    sync = h.sync(follower, 1, FOLLOWER)
    assert h.result(sync) is None
    new = h.join(instance=FOLLOWER)
    assert h.sync_result(sync).error_code == ErrorCode.FENCED_INSTANCE_ID
    assert h.result(new) is None  # CompletingRebalance -> a new rebalance
    assert h.group().state is PREPARING_REBALANCE


def test_duplicate_static_member_replaces_a_parked_rejoin_during_preparing_rebalance():
    h = Harness()
    leader, follower, generation = static_group(h, rebalance=10000)
    h.join()  # a new dynamic member starts a rebalance
    old = h.join(follower, FOLLOWER, rebalance=10000)
    new = h.join(instance=FOLLOWER, rebalance=10000)
    assert (h.join_result(old).error_code, h.join_result(old).member_id) == (
        ErrorCode.FENCED_INSTANCE_ID,
        follower,
    )
    leader_join = h.join(leader, LEADER, rebalance=10000)
    r = h.join_result(new)
    assert (r.error_code, r.generation_id) == (ErrorCode.NONE, generation + 1)
    assert r.member_id != follower and r.member_id in h.group().members
    assert h.join_result(leader_join).leader == leader


def test_static_follower_rejoining_with_known_id_and_same_protocols_gets_current_generation():
    h = Harness()
    leader, follower, generation = static_group(h)
    r = h.join_result(h.join(follower, FOLLOWER))
    assert (r.error_code, r.generation_id, r.member_id, r.leader, r.members) == (
        0,
        generation,
        follower,
        leader,
        [],
    )
    assert h.group().state == GroupState.STABLE


def test_static_leader_rejoining_with_known_id_rebalances():
    h = Harness()
    leader, _follower, _generation = static_group(h)
    token = h.join(leader, LEADER)
    assert h.result(token) is None
    assert h.group().state is PREPARING_REBALANCE


def test_static_leader_rejoining_a_dead_group_gets_coordinator_not_available():
    h = Harness()
    leader, _, _ = static_group(h)
    h.group().transition(DEAD, h.now)
    assert h.join_result(h.join(leader, LEADER)).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_static_leader_rejoining_a_group_forced_empty_is_unknown_member():
    h = Harness()
    leader, _, _ = static_group(h)
    h.group().transition(PREPARING_REBALANCE, h.now)
    h.group().transition(EMPTY, h.now)
    assert h.join_result(h.join(leader, LEADER)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoining_a_group_forced_empty_is_an_internal_error():
    h = Harness()
    static_group(h)
    h.group().transition(PREPARING_REBALANCE, h.now)
    h.group().transition(EMPTY, h.now)
    assert h.join_result(h.join(instance=FOLLOWER)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_static_follower_rejoining_with_changed_protocols_rebalances():
    h = Harness()
    _leader, follower, _ = static_group(h)
    token = h.join(follower, FOLLOWER, protocols=[("roundrobin", b"rr")])
    assert h.result(token) is None
    assert h.group().state is PREPARING_REBALANCE


def test_replaced_static_member_changing_the_selected_protocol_rebalances():
    h = Harness()
    leader, _follower, generation = static_group(h)
    assert h.group().protocol_name == "range"
    token = h.join(instance=FOLLOWER, protocols=[("roundrobin", b"rr")])
    assert h.result(token) is None
    assert h.group().state is PREPARING_REBALANCE
    h.join(leader, LEADER)
    r = h.join_result(token)
    assert (r.generation_id, r.protocol_name) == (generation + 1, "roundrobin")


def test_replaced_static_follower_keeping_the_protocol_gets_its_assignment_without_rebalance():
    h = Harness()
    leader, follower, generation = static_group(h)
    records = len(h.records)
    r = h.join_result(
        h.join(instance=FOLLOWER, protocols=[("range", b"new"), ("x", b"")], version=8)
    )
    assert (r.error_code, r.generation_id, r.protocol_name, r.protocol_type) == (
        0,
        generation,
        "range",
        "consumer",
    )
    assert (r.leader, r.members, r.skip_assignment) == (leader, [], False)
    new_id = r.member_id
    assert new_id != follower and h.group().static_members[FOLLOWER] == new_id
    assert h.group().state == GroupState.STABLE
    assert isinstance(h.records[records], GroupMetadataRecord)  # the new id is persisted
    sync = h.sync_result(h.sync(new_id, generation, FOLLOWER))
    assert sync.assignment == f"assignment-{follower}".encode()
    assert h.heartbeat(follower, generation, FOLLOWER) == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(new_id, generation, FOLLOWER) == ErrorCode.NONE


def test_replaced_static_leader_v5_to_8_names_the_old_leader_and_gets_no_member_list():
    h = Harness()
    leader, _follower, _generation = static_group(h)
    r = h.join_result(h.join(instance=LEADER, version=8))
    assert r.member_id != leader and h.group().leader_id == r.member_id
    assert (r.leader, r.members, r.skip_assignment) == (leader, [], False)


def test_replaced_static_leader_v9_skips_the_assignment_and_gets_the_member_list():
    h = Harness()
    _leader, follower, _generation = static_group(h)
    r = h.join_result(h.join(instance=LEADER, version=9))
    assert (r.leader, r.skip_assignment) == (r.member_id, True)
    assert {m.member_id for m in r.members} == {r.member_id, follower}


def test_replaced_static_follower_v9_is_not_told_to_skip_the_assignment():
    h = Harness()
    leader, _follower, _ = static_group(h)
    r = h.join_result(h.join(instance=FOLLOWER, version=9))
    assert (r.leader, r.skip_assignment, r.members) == (leader, False, [])


def test_replaced_static_member_gets_its_new_timeouts():
    h = Harness()
    _leader, _follower, _ = static_group(h, session=10000, rebalance=30000)
    r = h.join_result(h.join(instance=FOLLOWER, session=7000, rebalance=8000))
    m = h.group().members[r.member_id]
    assert (m.session_timeout_ms, m.rebalance_timeout_ms) == (7000, 8000)
    snapshot = h.records[-1]
    assert isinstance(snapshot, GroupMetadataRecord)
    assert {(x.member_id, x.session_timeout_ms) for x in snapshot.members} >= {(r.member_id, 7000)}


def test_leader_rejoin_and_follower_protocol_change_rebalance_together():
    h = Harness()
    leader, _follower, generation = static_group(h)
    leader_join = h.join(leader, LEADER)
    follower_join = h.join(instance=FOLLOWER, protocols=[("roundrobin", b"rr")])
    lr, fr = h.join_result(leader_join), h.join_result(follower_join)
    assert lr.generation_id == fr.generation_id == generation + 1
    assert lr.protocol_name == "roundrobin"
    assert {m.member_id for m in lr.members} == {leader, fr.member_id}


def test_static_follower_with_mismatched_instance_id_is_fenced():
    h = Harness()
    _leader, follower, _ = static_group(h)
    assert h.join_result(h.join(follower, LEADER)).error_code == ErrorCode.FENCED_INSTANCE_ID


def test_static_leader_with_mismatched_instance_id_is_fenced():
    h = Harness()
    leader, _follower, _ = static_group(h)
    assert h.join_result(h.join(leader, FOLLOWER)).error_code == ErrorCode.FENCED_INSTANCE_ID


def test_static_leader_sync_with_invalid_member_id_is_fenced():
    h = Harness()
    _leader, _follower, generation = static_group(h)
    assert (
        h.sync_result(h.sync("invalid", generation, LEADER)).error_code
        == ErrorCode.FENCED_INSTANCE_ID
    )


def test_static_heartbeat_with_invalid_member_id_is_fenced_and_unknown_instance_is_unknown():
    h = Harness()
    leader, _follower, generation = static_group(h)
    assert h.heartbeat("invalid", generation, LEADER) == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(leader, generation, "unknown-instance") == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(leader, generation, LEADER) == ErrorCode.NONE


def test_each_static_rejoin_gets_a_different_member_id():
    h = Harness()
    _leader, follower, _ = static_group(h)
    first = h.join_result(h.join(instance=FOLLOWER)).member_id
    second = h.join_result(h.join(instance=FOLLOWER)).member_id
    assert len({follower, first, second}) == 3
    assert first.startswith(f"{FOLLOWER}-") and second.startswith(f"{FOLLOWER}-")
    assert h.group().static_members[FOLLOWER] == second


def test_static_member_with_unknown_instance_and_known_member_id_is_unknown():
    h = Harness()
    _leader, follower, _ = static_group(h)
    assert (
        h.join_result(h.join(follower, "unknown-instance")).error_code
        == ErrorCode.UNKNOWN_MEMBER_ID
    )


def test_static_follower_that_does_not_rejoin_stays_in_the_group():
    h = Harness()
    leader, follower, generation = static_group(h, session=30000, rebalance=10000)
    token = h.join(instance="new", rebalance=10000)
    leader_join = h.join(leader, LEADER, rebalance=10000)
    h.advance(10000)
    lr = h.join_result(leader_join)
    assert lr.generation_id == generation + 1
    assert {m.member_id for m in lr.members} == {leader, follower, h.join_result(token).member_id}


def test_static_leader_that_does_not_rejoin_hands_leadership_to_a_member_that_did():
    h = Harness()
    leader, follower, _generation = static_group(h, session=30000, rebalance=10000)
    token = h.join(instance="new", rebalance=10000)
    follower_join = h.join(follower, FOLLOWER, rebalance=10000)
    h.advance(10000)
    fr, nr = h.join_result(follower_join), h.join_result(token)
    assert fr.leader in (follower, nr.member_id) and fr.leader != leader
    assert leader in h.group().members  # static: kept at completion


def test_group_waits_indefinitely_when_the_only_static_member_does_not_rejoin():
    h = Harness()
    _leader, follower, generation = static_group(h, session=100000, rebalance=10000)
    h.leave(follower)  # Stable -> PreparingRebalance; the leader never rejoins
    for _ in range(5):
        h.advance(10000)
        assert h.group().state is PREPARING_REBALANCE
    assert h.group().generation_id == generation
    assert h.co.timer_deadline(join_key(GROUP)) == h.now + 10000


def test_old_follower_rejoining_after_its_instance_took_a_new_id_is_fenced():
    # Kafka: testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged
    h = Harness()
    leader, follower, generation = static_group(h)
    leader_join = h.join(leader, LEADER)  # Stable -> PreparingRebalance
    duplicate = h.join(instance=FOLLOWER)  # takes the instance over: everyone has joined
    new = h.join_result(duplicate)
    assert (new.error_code, new.generation_id, new.leader, new.members) == (
        0,
        generation + 1,
        leader,
        [],
    )
    assert new.member_id != follower
    old = h.join_result(h.join(follower, FOLLOWER))
    assert (old.error_code, old.member_id, old.generation_id) == (
        ErrorCode.FENCED_INSTANCE_ID,
        follower,
        -1,
    )
    assert (old.protocol_type, old.protocol_name) == (None, None)
    lr = h.join_result(leader_join)
    assert (lr.generation_id, lr.leader) == (generation + 1, leader)
    assert {m.member_id for m in lr.members} == {leader, new.member_id}
    assert h.group().state == GroupState.COMPLETING_REBALANCE


def test_static_member_rejoining_with_known_id_while_completing_rebalance_keeps_the_generation():
    # Kafka: testStaticMemberRejoinWithKnownMemberId
    h = Harness()
    token = h.join(instance=LEADER)
    h.advance(3000)
    member_id = h.join_result(token).member_id
    again = h.join_result(h.join(member_id, LEADER))  # same protocols: answered at once
    assert (again.error_code, again.member_id, again.generation_id) == (
        ErrorCode.NONE,
        member_id,
        1,
    )
    assert h.group().state == GroupState.COMPLETING_REBALANCE
    sync = h.sync_result(h.sync(member_id, 1, LEADER, [(member_id, b"a")]))
    assert (sync.error_code, sync.assignment) == (ErrorCode.NONE, b"a")
    assert h.group().state == GroupState.STABLE


def stuck_group(h: Harness) -> tuple[str, int]:
    """Kafka's groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember: the static follower
    leaves during a rebalance the static leader never rejoins; only the leader is left and
    the group stays in PreparingRebalance. Returns (leader id, generation)."""
    leader, follower, _ = static_group(h, session=25000, rebalance=10000)
    dynamic = h.join(session=25000, rebalance=10000)
    h.advance(10000)
    r = h.join_result(dynamic)
    assert (r.leader, r.generation_id, len(r.members)) == (r.member_id, 2, 3)
    assert h.leave(follower).members == [MemberError(follower, None, ErrorCode.NONE)]
    h.advance(10000)  # the dynamic member did not rejoin; the static leader is kept
    g = h.group()
    assert (set(g.members), g.generation_id, g.state) == ({leader}, 2, PREPARING_REBALANCE)
    return leader, 2


def test_stuck_group_empties_when_its_static_leader_never_rejoins():
    # Kafka: testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout
    h = Harness()
    _leader, generation = stuck_group(h)
    h.advance(15000)  # the leader's session, restarted at generation 2, ends
    g = h.group()
    assert (g.state, g.members, g.leader_id, g.generation_id) == (EMPTY, {}, None, generation + 1)


def test_stuck_group_completes_when_its_static_leader_rejoins_with_a_new_id():
    # Kafka: testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout
    h = Harness()
    leader, generation = stuck_group(h)
    r = h.join_result(h.join(instance=LEADER, session=25000, rebalance=10000))
    assert (r.error_code, r.generation_id, r.leader) == (
        ErrorCode.NONE,
        generation + 1,
        r.member_id,
    )
    assert r.member_id != leader
    assert [(m.member_id, m.group_instance_id) for m in r.members] == [(r.member_id, LEADER)]
    g = h.group()
    assert (set(g.members), g.state) == ({r.member_id}, GroupState.COMPLETING_REBALANCE)


@pytest.mark.parametrize(
    ("synced", "protocols"),
    [(True, [("roundrobin", b"rr")]), (False, [("range", b"range-metadata")])],
    ids=["stable-with-new-protocol", "completing-rebalance"],
)
def test_replacing_the_only_static_member_rebalances_to_a_new_generation_at_once(synced, protocols):
    # Kafka: testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance,
    # testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance
    h = Harness()
    token = h.join(instance=LEADER)
    h.advance(3000)
    old = h.join_result(token).member_id
    if synced:
        h.sync(old, 1, LEADER, [(old, b"a")])
        assert h.group().state == GroupState.STABLE
    r = h.join_result(h.join(instance=LEADER, protocols=protocols))
    assert (r.error_code, r.generation_id, r.leader) == (ErrorCode.NONE, 2, r.member_id)
    assert r.member_id != old and r.protocol_name == protocols[0][0]
    g = h.group()
    assert (set(g.members), g.state) == ({r.member_id}, GroupState.COMPLETING_REBALANCE)
