"""New and pending members, sessions, Heartbeat and LeaveGroup."""

from __future__ import annotations

import uuid

from coordinator.group import GroupConfig, GroupCoordinator
from coordinator.group.classic.states import DEAD, GroupState
from coordinator.group.deadlines import heartbeat_key
from coordinator.group.effects import Schedule
from coordinator.group.requests import HeartbeatInput, JoinGroupInput
from coordinator.group.results import MemberError
from protocol.errors import ErrorCode

from .harness import GROUP, Harness

# -- new and pending members, session expiry (spec 4.9, 4.10) -----------------------------------


def test_member_ids_are_the_client_id_a_dash_and_a_random_uuid():
    co: GroupCoordinator[int] = GroupCoordinator(GroupConfig())
    ids = []
    for token in range(200):
        req = JoinGroupInput(
            GROUP, "", None, "my-client", "/h", 10000, 10000, "consumer", [("range", b"")], 9
        )
        (reply,) = co.join_group(token, req, 0).replies
        ids.append(reply[1].member_id)
    assert len(set(ids)) == len(ids)
    for member_id in ids:
        assert member_id.startswith("my-client-")
        rest = member_id.removeprefix("my-client-")
        parsed = uuid.UUID(rest)
        assert (str(parsed), parsed.version, parsed.variant) == (rest, 4, uuid.RFC_4122)


def test_new_member_has_the_join_timeout_until_its_join_completes():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    token = h.join(session=10000, rebalance=30000)  # the leader will not rejoin
    new_id = "client-2"
    assert h.co.timer_deadline(heartbeat_key(GROUP, new_id)) == h.now + 300000
    for _ in range(6):
        h.advance(5000)
        h.heartbeat(leader, generation)
    r = h.join_result(token)
    assert (r.member_id, r.leader, r.generation_id) == (new_id, new_id, 2)
    assert leader not in h.group().members
    assert h.co.timer_deadline(heartbeat_key(GROUP, new_id)) == h.now + 10000


def test_new_member_whose_join_times_out_is_removed_and_answered_unknown_member():
    h = Harness(GroupConfig(new_member_join_timeout_ms=10000))
    (leader,), generation = h.stable_group(1, rebalance=60000)
    token = h.join(rebalance=60000)
    for _ in range(4):
        h.advance(2500)
        assert h.heartbeat(leader, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    r = h.join_result(token)
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")
    assert set(h.group().members) == {leader}
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_member_that_never_syncs_after_join_is_removed_at_its_session_timeout():
    h = Harness()
    a, b = h.join(session=10000), h.join(session=10000)
    h.advance(6000)
    leader, follower = h.join_result(a).member_id, h.join_result(b).member_id
    h.sync(leader, 1, None, [(leader, b"l"), (follower, b"f")])
    h.heartbeat(leader, 1)
    h.advance(9999)
    assert follower in h.group().members
    assert h.heartbeat(leader, 1) == ErrorCode.NONE
    h.advance(1)
    assert follower not in h.group().members
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_pending_member_expires_after_its_session_timeout():
    h = Harness()
    pending = h.join_result(h.join(version=5, session=6000)).member_id
    assert h.join_result(h.join(version=5)).error_code == ErrorCode.MEMBER_ID_REQUIRED
    h.advance(6000)
    assert pending not in h.group().pending_join_members
    r = h.join_result(h.join(pending, version=5))
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, pending)


def test_member_that_stops_heartbeating_is_removed_and_the_group_rebalances():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=10000)
    h.advance(5000)
    assert h.heartbeat(leader, generation) == ErrorCode.NONE
    h.advance(5000)  # the follower's session (restarted when its join completed) ends
    assert h.heartbeat(leader, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    assert follower not in h.group().members
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_last_member_expiring_empties_the_group_with_a_new_generation():
    h = Harness()
    (_leader,), generation = h.stable_group(1, session=10000)
    h.advance(10000)
    g = h.group()
    assert (g.state, g.generation_id, g.protocol_name) == (GroupState.EMPTY, generation + 1, None)
    assert g.protocol_type == "consumer"  # kept for the Empty group (spec 4.11)


def test_pending_member_rejoining_with_an_instance_id_is_an_internal_error():
    h = Harness()
    pending = h.join_result(h.join(version=5)).member_id
    r = h.join_result(h.join(pending, "instance", version=5))
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_SERVER_ERROR, "")


def test_heartbeats_maintain_the_session():
    h = Harness()
    (leader,), generation = h.stable_group(1, session=10000)
    for _ in range(10):
        h.advance(9999)
        assert h.heartbeat(leader, generation) == ErrorCode.NONE
    assert h.group().state == GroupState.STABLE


def test_offset_commits_maintain_the_session():
    h = Harness()
    (leader,), generation = h.stable_group(1, session=10000)
    for _ in range(5):
        h.advance(9999)
        assert h.commit({("t", 0): 1}, member_id=leader, generation=generation) == {
            ("t", 0): ErrorCode.NONE
        }
    assert leader in h.group().members


def test_member_heartbeating_during_rebalance_but_not_rejoining_is_dropped_at_completion():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=10000, rebalance=30000)
    token = h.join(leader, session=10000, rebalance=30000)
    for _ in range(5):
        h.advance(5000)
        assert h.heartbeat(follower, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(5000)  # t = start + 30000: the rebalance timeout
    assert h.join_result(token).generation_id == generation + 1
    assert follower not in h.group().members


def test_member_expiring_during_rebalance_completes_the_join():
    h = Harness()
    (leader, _follower), generation = h.stable_group(2, session=10000, rebalance=30000)
    start = h.now
    token = h.join(leader, session=10000, rebalance=30000)
    h.advance(9999)
    assert h.result(token) is None
    h.advance(1)  # the follower's session ends before the rebalance timeout
    assert h.now - start < 30000
    assert h.join_result(token).generation_id == generation + 1


def test_member_with_a_parked_join_does_not_expire():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=10000, rebalance=60000)
    token = h.join(leader, session=10000, rebalance=60000)
    for _ in range(6):
        h.advance(5000)
        assert (
            h.heartbeat(follower, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        )  # keeps the phase open
    assert leader in h.group().members and h.result(token) is None
    h.advance(10000)  # the follower stops heartbeating: it expires, the join completes
    assert h.join_result(token).error_code == ErrorCode.NONE
    assert set(h.group().members) == {leader}


def test_heartbeat_timer_of_a_dead_group_is_ignored():
    h = Harness()
    (leader,), _ = h.stable_group(1, session=10000)
    h.group().transition(DEAD, h.now)
    h.advance(10000)
    assert leader in h.group().members


def test_stale_heartbeat_timer_of_a_removed_member_is_ignored():
    h = Harness()
    (_leader, follower), _generation = h.stable_group(2, session=10000)
    key = heartbeat_key(GROUP, follower)
    h.leave(follower)
    assert h.co.fire_timer(key, h.now + 10**6).replies == []
    assert h.co.timer_deadline(key) is None


def test_heartbeat_timer_fired_early_only_rearms_for_its_deadline():
    h = Harness()
    (leader,), _ = h.stable_group(1, session=10000)
    key = heartbeat_key(GROUP, leader)
    deadline = h.co.timer_deadline(key)
    assert deadline is not None
    effects = h.co.fire_timer(key, h.now + 1)
    assert effects.replies == effects.events == []
    assert effects.timers == [Schedule(key, deadline)]
    assert leader in h.group().members


def test_heartbeat_moving_the_session_later_tells_the_driver_nothing():
    # The driver's timer fires at the old deadline and is re-armed then: the member
    # lives a full session after its last heartbeat, not after the first.
    h = Harness()
    (leader,), generation = h.stable_group(1, session=10000)
    key = heartbeat_key(GROUP, leader)
    h.advance(4000)
    effects = h.co.heartbeat(h._token(), HeartbeatInput(GROUP, generation, leader, None), h.now)
    assert effects.timers == []
    h.apply(effects)
    assert h.co.timer_deadline(key) == h.now + 10000
    h.advance(9999)
    assert leader in h.group().members
    assert h.timers[key][0] == h.now + 1  # re-armed when the old deadline passed
    h.advance(1)
    assert leader not in h.group().members


def test_heartbeat_now_answers_as_heartbeat():
    a, b = Harness(), Harness()
    for h in (a, b):
        h.stable_group(2, session=10000)
        h.advance(100)
    leader, follower = list(a.group().members)
    generation = a.group().generation_id
    cases = [
        (GROUP, generation, leader, None),  # alive: 0
        (GROUP, generation - 1, follower, None),  # ILLEGAL_GENERATION
        (GROUP, generation, "nobody", None),  # UNKNOWN_MEMBER_ID
        (GROUP, generation, leader, "not-static"),  # an instance id nobody holds
        ("", generation, leader, None),  # INVALID_GROUP_ID
        ("other", generation, leader, None),  # no such group
    ]
    for group, gen, member, instance in cases:
        expected = a.heartbeat(member, gen, instance, group=group)
        error, _, _ = b.co.heartbeat_now(group, gen, member, instance, b.now)
        assert error == expected, (group, gen, member, instance)
    assert a.co.timer_deadline(heartbeat_key(GROUP, leader)) == b.co.timer_deadline(
        heartbeat_key(GROUP, leader)
    )


# -- Heartbeat --------------------------------------------------------------------------------


def test_heartbeat_to_unknown_group_is_unknown_member():
    assert Harness().heartbeat("m", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_with_empty_group_id_is_invalid():
    assert Harness().heartbeat("m", 1, group="") == ErrorCode.INVALID_GROUP_ID


def test_heartbeat_to_dead_group_is_coordinator_not_available():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.group().transition(DEAD, h.now)
    assert h.heartbeat(leader, generation) == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_to_empty_group_is_unknown_member():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.leave(leader)
    assert h.heartbeat(leader, generation + 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_from_unknown_member_is_unknown_member():
    h = Harness()
    h.stable_group(1)
    assert h.heartbeat("stranger", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_during_preparing_rebalance_is_rebalance_in_progress():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    h.join(leader)
    assert h.heartbeat(follower, generation) == ErrorCode.REBALANCE_IN_PROGRESS


def test_heartbeat_during_completing_rebalance_is_fine():
    h = Harness()
    token = h.join()
    h.advance(3000)
    assert h.heartbeat(h.join_result(token).member_id, 1) == 0


def test_heartbeat_with_another_generation_is_illegal_generation():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    assert h.heartbeat(leader, generation + 1) == ErrorCode.ILLEGAL_GENERATION


def test_valid_heartbeat():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    assert h.heartbeat(leader, generation) == ErrorCode.NONE


def test_heartbeat_from_pending_member_is_unknown_member():
    h = Harness()
    (_leader,), generation = h.stable_group(1)
    pending = h.join_result(h.join(version=5)).member_id
    assert h.heartbeat(pending, generation) == ErrorCode.UNKNOWN_MEMBER_ID


# -- LeaveGroup -------------------------------------------------------------------------------


def test_leave_with_empty_group_id_is_invalid():
    r = Harness().leave("m", group="")
    assert (r.error_code, r.members) == (ErrorCode.INVALID_GROUP_ID, [])


def test_leave_unknown_group_answers_unknown_member_per_member():
    r = Harness().leave("a", ("", "i"))
    assert (r.error_code, r.members) == (
        0,
        [
            MemberError("a", None, ErrorCode.UNKNOWN_MEMBER_ID),
            MemberError("", "i", ErrorCode.UNKNOWN_MEMBER_ID),
        ],
    )


def test_leave_unknown_member_of_existing_group():
    h = Harness()
    h.stable_group(1)
    assert h.leave("stranger").members == [
        MemberError("stranger", None, ErrorCode.UNKNOWN_MEMBER_ID)
    ]


def test_leave_dead_group_is_coordinator_not_available():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.group().transition(DEAD, h.now)
    r = h.leave(leader, "other")
    assert (r.error_code, r.members) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, [])


def test_valid_leave_rebalances_the_group():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    assert h.leave(follower).members == [MemberError(follower, None, ErrorCode.NONE)]
    # The leader alone must rejoin: the group waits for it.
    assert h.group().state == GroupState.PREPARING_REBALANCE
    assert follower not in h.group().members
    r = h.join_result(h.join(leader))
    assert r.generation_id == generation + 1


def test_last_member_leaving_empties_the_group():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.leave(leader)
    assert (h.group().state, h.group().generation_id) == (GroupState.EMPTY, generation + 1)


def test_leave_answers_the_leaving_members_parked_join():
    h = Harness()
    (leader, _follower), _ = h.stable_group(2)
    token = h.join(leader)
    h.leave(leader)
    r = h.join_result(token)
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "")


def test_leave_with_fenced_instance_id():
    h = Harness()
    (_a, _b), _ = h.stable_group(2, static=True)
    assert h.leave(("wrong-id", "instance-0")).members == [
        MemberError("wrong-id", "instance-0", ErrorCode.FENCED_INSTANCE_ID)
    ]


def test_leave_static_member_by_instance_id_alone():
    h = Harness()
    (_a, _b), _ = h.stable_group(2, static=True)
    assert h.leave(("", "instance-1")).members == [MemberError("", "instance-1", ErrorCode.NONE)]
    assert "instance-1" not in h.group().static_members
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_batch_leave_of_static_members():
    h = Harness()
    (_a, b), _ = h.stable_group(2, static=True)
    r = h.leave(("", "instance-0"), (b, "instance-1"))
    assert r.members == [
        MemberError("", "instance-0", ErrorCode.NONE),
        MemberError(b, "instance-1", ErrorCode.NONE),
    ]
    assert not h.group().members
    assert h.group().state == GroupState.EMPTY


def test_batch_leave_of_static_members_of_unknown_group():
    r = Harness().leave(("", "instance-0"), ("m", "instance-1"))
    assert r.members == [
        MemberError("", "instance-0", ErrorCode.UNKNOWN_MEMBER_ID),
        MemberError("m", "instance-1", ErrorCode.UNKNOWN_MEMBER_ID),
    ]


def test_batch_leave_with_a_fenced_instance():
    h = Harness()
    (_a, _b), _ = h.stable_group(2, static=True)
    r = h.leave(("", "instance-0"), ("invalid", "instance-1"))
    assert r.members == [
        MemberError("", "instance-0", ErrorCode.NONE),
        MemberError("invalid", "instance-1", ErrorCode.FENCED_INSTANCE_ID),
    ]


def test_batch_leave_with_an_unknown_instance():
    h = Harness()
    (_a, _b), _ = h.stable_group(2, static=True)
    r = h.leave(("", "unknown"), ("", "instance-1"))
    assert r.members == [
        MemberError("", "unknown", ErrorCode.UNKNOWN_MEMBER_ID),
        MemberError("", "instance-1", ErrorCode.NONE),
    ]


def test_pending_member_leaving():
    h = Harness()
    h.stable_group(1)
    pending = h.join_result(h.join(version=5)).member_id
    r = h.leave(("", "unknown"), pending)
    assert r.members == [
        MemberError("", "unknown", ErrorCode.UNKNOWN_MEMBER_ID),
        MemberError(pending, None, ErrorCode.NONE),
    ]
    assert not h.group().pending_join_members
    assert h.co.timer_deadline(heartbeat_key(GROUP, pending)) is None


def test_joined_and_pending_members_leaving_together():
    h = Harness()
    (leader, follower), _ = h.stable_group(2)
    pending = h.join_result(h.join(version=5)).member_id
    r = h.leave(leader, follower, pending, "unknown")
    assert r.members == [
        MemberError(leader, None, ErrorCode.NONE),
        MemberError(follower, None, ErrorCode.NONE),
        MemberError(pending, None, ErrorCode.NONE),
        MemberError("unknown", None, ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    assert h.group().state == GroupState.EMPTY


def test_pending_member_timing_out_leaves_a_stable_group_untouched():
    h = Harness(GroupConfig(min_session_timeout_ms=1000))
    (leader,), generation = h.stable_group(1, static=True, session=5000, rebalance=10000)
    r = h.join_result(h.join(version=5, session=5000))
    assert (r.error_code, h.group().state) == (ErrorCode.MEMBER_ID_REQUIRED, GroupState.STABLE)
    for _ in range(2):
        h.advance(2500)
        assert h.heartbeat(leader, generation, "instance-0") == ErrorCode.NONE
    g = h.group()
    assert (set(g.members), g.pending_join_members, g.generation_id) == ({leader}, set(), 1)
    assert g.state == GroupState.STABLE


def test_rebalance_completes_without_an_unjoined_static_member_which_then_expires():
    h = Harness(GroupConfig(min_session_timeout_ms=1000))
    (first,), generation = h.stable_group(1, static=True, session=5000, rebalance=10000)
    start = h.now
    second = h.join(session=5000, rebalance=10000)  # dynamic newcomer: rebalance
    for _ in range(2):
        h.advance(2500)
        assert h.heartbeat(first, generation, "instance-0") == ErrorCode.REBALANCE_IN_PROGRESS
    h.advance_to(start + 10000)  # the rebalance timeout: the static member is kept
    r = h.join_result(second)
    assert (r.error_code, r.generation_id, r.leader) == (ErrorCode.NONE, 2, r.member_id)
    assert set(h.group().members) == {first, r.member_id}
    h.sync(r.member_id, 2, None, [(r.member_id, b"x")])
    assert h.group().state == GroupState.STABLE
    assert (
        h.heartbeat(first, generation, "instance-0") == ErrorCode.ILLEGAL_GENERATION
    )  # it never rejoined
    # Its session was restarted at the join completion; nothing keeps it alive now.
    h.advance(2000)
    assert h.heartbeat(r.member_id, 2) == ErrorCode.NONE
    h.advance(3000)
    assert first not in h.group().members
    assert h.heartbeat(r.member_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS


def test_member_that_stops_heartbeating_after_its_sync_is_removed():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=10000)
    for _ in range(3):
        h.advance(4000)
        h.heartbeat(leader, generation)
    assert follower not in h.group().members


def test_v4_dynamic_join_into_a_stable_group_only_reserves_an_id():
    h = Harness()
    h.stable_group(1)
    r = h.join_result(h.join(version=4))
    assert (r.error_code, r.generation_id, r.leader, r.members) == (
        ErrorCode.MEMBER_ID_REQUIRED,
        -1,
        "",
        [],
    )
    assert r.member_id in h.group().pending_join_members
    assert h.group().state == GroupState.STABLE
