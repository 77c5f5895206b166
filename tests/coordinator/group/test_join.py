"""JoinGroup: validation, max size, the initial delay, join completion, rejoin decisions."""

from __future__ import annotations

import pytest

from coordinator.group import GroupConfig
from coordinator.group.classic.states import DEAD, GroupState
from coordinator.group.deadlines import join_key
from coordinator.group.events import MemberRemoved
from coordinator.group.records import GroupMetadataRecord, MemberRecord
from coordinator.group.results import MemberMetadata
from protocol.errors import ErrorCode

from .harness import GROUP, PROTOCOLS, Harness

# -- basics and validation --------------------------------------------------------------------


def test_join_unknown_member_creates_group_and_completes_after_initial_delay():
    h = Harness()
    token = h.join()
    assert h.result(token) is None
    assert h.group().state == GroupState.PREPARING_REBALANCE
    h.advance(2999)
    assert h.result(token) is None
    h.advance(1)
    r = h.join_result(token)
    assert (r.error_code, r.generation_id, r.member_id, r.leader) == (
        ErrorCode.NONE,
        1,
        "client-1",
        "client-1",
    )
    assert (r.protocol_type, r.protocol_name, r.skip_assignment) == ("consumer", "range", False)
    assert r.members == [MemberMetadata("client-1", None, b"range-metadata")]
    assert h.group().state == GroupState.COMPLETING_REBALANCE


def test_join_with_member_id_into_unknown_group_is_unknown_member_and_creates_nothing():
    h = Harness()
    r = h.join_result(h.join("someone"))
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "someone",
        -1,
        "",
    )
    assert GROUP not in h.co.groups


def test_join_with_unknown_member_id_into_existing_group_is_unknown_member():
    h = Harness()
    h.stable_group(1)
    r = h.join_result(h.join("someone"))
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "someone")


def test_new_member_joining_dead_group_gets_coordinator_not_available():
    h = Harness()
    h.join()
    h.group().transition(DEAD, 0)
    r = h.join_result(h.join())
    assert (r.error_code, r.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, "")


def test_existing_member_joining_dead_group_gets_coordinator_not_available():
    h = Harness()
    (member_id,), _ = h.stable_group(1)
    h.group().transition(DEAD, 0)
    r = h.join_result(h.join(member_id))
    assert (r.error_code, r.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)


@pytest.mark.parametrize(
    ("session", "code"), [(5999, 26), (6000, None), (1800000, None), (1800001, 26)]
)
def test_session_timeout_bounds(session, code):
    h = Harness()
    token = h.join(session=session)
    if code is None:
        assert h.result(token) is None  # parked: accepted
    else:
        assert h.join_result(token).error_code == code
        assert GROUP not in h.co.groups


def test_empty_group_id_is_invalid():
    h = Harness()
    assert h.join_result(h.join(group="")).error_code == ErrorCode.INVALID_GROUP_ID


def test_join_with_another_protocol_type_is_inconsistent():
    h = Harness()
    h.stable_group(1)
    r = h.join_result(h.join(protocol_type="connect"))
    assert (r.error_code, r.member_id, r.protocol_type, r.protocol_name) == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        "",
        None,
        None,
    )


def test_join_with_empty_protocol_type_is_inconsistent():
    h = Harness()
    assert (
        h.join_result(h.join(protocol_type="")).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )


def test_join_with_no_protocols_is_inconsistent():
    h = Harness()
    assert h.join_result(h.join(protocols=[])).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_with_no_protocol_in_common_is_inconsistent():
    h = Harness()
    h.join(protocols=[("range", b"")])
    assert (
        h.join_result(h.join(protocols=[("roundrobin", b"")])).error_code
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )


def test_second_join_of_a_member_with_an_unsupported_protocol_is_inconsistent():
    h = Harness()
    first = h.join_result(h.join(version=5))
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    h.join(first.member_id, protocols=[("range", b"")], version=5)
    r = h.join_result(h.join(first.member_id, protocols=[("roundrobin", b"")], version=5))
    assert (r.error_code, r.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, first.member_id)


def test_join_errors_carry_no_protocol_type_or_name():
    # Kafka: testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs
    h = Harness()
    h.stable_group(1)
    r = h.join_result(h.join("stranger"))
    assert (r.error_code, r.protocol_type, r.protocol_name) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        None,
        None,
    )


def test_leader_and_follower_are_both_told_the_protocol_type():
    # Kafka: testJoinGroupReturnsTheProtocolType
    h = Harness()
    leader, follower = h.join(), h.join()
    h.advance(6000)
    for token in (leader, follower):
        r = h.join_result(token)
        assert (r.error_code, r.protocol_type, r.protocol_name) == (
            ErrorCode.NONE,
            "consumer",
            "range",
        )


def test_failed_join_still_creates_the_empty_group():
    h = Harness()
    h.join(protocols=[])
    assert h.group().state == GroupState.EMPTY
    assert isinstance(h.records[-1], GroupMetadataRecord)


def test_rejoining_an_empty_group_with_an_old_member_id_is_unknown_member():
    h = Harness()
    (member_id,), _generation = h.stable_group(1)
    h.leave(member_id)
    assert h.group().state == GroupState.EMPTY
    r = h.join_result(h.join(member_id))
    assert (r.error_code, r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, member_id)


def test_member_id_is_the_client_id_and_a_unique_suffix():
    h = Harness()
    a, b = h.join(client_id="app"), h.join(client_id="app")
    h.advance(6000)  # the second member extended the initial delay
    assert {h.join_result(a).member_id, h.join_result(b).member_id} == {"app-1", "app-2"}


# -- group.max.size (KIP-389) -----------------------------------------------------------------


def test_join_over_max_size_during_initial_rebalance_is_rejected():
    h = Harness(GroupConfig(max_size=2))
    a, b = h.join(), h.join()
    r = h.join_result(h.join())
    assert (r.error_code, r.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    h.advance(6000)
    assert h.join_result(a).error_code == h.join_result(b).error_code == ErrorCode.NONE
    assert len(h.group().members) == 2


def test_dynamic_members_with_required_known_member_id_over_max_size():
    h = Harness(GroupConfig(max_size=2))
    ids = [h.join_result(h.join(version=5)).member_id for _ in range(3)]
    assert len(h.group().pending_join_members) == 3  # pending ids do not count
    tokens = [h.join(m, version=5) for m in ids]
    assert h.join_result(tokens[2]).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert ids[2] not in h.group().pending_join_members
    assert len(h.group().members) == 2


def test_accepted_members_rejoining_a_full_group_are_answered_at_once_with_their_generation():
    # Kafka: testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember
    h = Harness(GroupConfig(max_size=2, initial_rebalance_delay_ms=50))
    tokens = [h.join() for _ in range(3)]  # v3: no MEMBER_ID_REQUIRED round trip
    assert h.join_result(tokens[2]).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    h.advance(50)  # the second member bought one more delay
    assert h.result(tokens[0]) is None
    h.advance(50)
    accepted = [h.join_result(t) for t in tokens[:2]]
    assert [r.error_code for r in accepted] == [ErrorCode.NONE, ErrorCode.NONE]
    again = [h.join_result(h.join(r.member_id)) for r in accepted]  # unchanged protocols
    assert [(r.error_code, r.generation_id) for r in again] == [(ErrorCode.NONE, 1)] * 2
    assert h.join_result(h.join()).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    g = h.group()
    assert (len(g.members), g.num_members_awaiting_join, g.state) == (
        2,
        0,
        GroupState.COMPLETING_REBALANCE,
    )


def test_static_members_over_max_size_are_rejected():
    h = Harness(GroupConfig(max_size=2))
    h.join(instance="a")
    h.join(instance="b")
    assert h.join_result(h.join(instance="c")).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert set(h.group().static_members) == {"a", "b"}


def test_members_can_rejoin_a_full_group_while_rebalancing():
    h = Harness(GroupConfig(max_size=2, initial_rebalance_delay_ms=50))
    ids = [h.join_result(h.join(version=5)).member_id for _ in range(3)]
    for m in ids:
        h.join(m, version=5)
    again = [h.join(m, version=5) for m in ids]  # rejoins while parked are accepted
    assert h.join_result(again[2]).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    h.advance(50)
    h.advance(50)
    assert [h.join_result(t).error_code for t in again] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
    ]
    assert h.group().state == GroupState.COMPLETING_REBALANCE


def test_join_into_full_stable_group_is_rejected_but_members_may_rejoin():
    h = Harness(GroupConfig(max_size=2))
    (leader, _follower), _ = h.stable_group(2)
    assert h.join_result(h.join()).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.group().state == GroupState.STABLE
    assert h.result(h.join(leader)) is None  # the leader's join starts a rebalance


def snapshot(count: int, state: str = "Stable", **member_fields: int) -> GroupMetadataRecord:
    members = [
        MemberRecord(
            member_id=f"member-{i}",
            group_instance_id=None,
            client_id="client",
            client_host="/host",
            rebalance_timeout_ms=member_fields.get("rebalance", 10000),
            session_timeout_ms=member_fields.get("session", 5000),
            protocol_type="consumer",
            protocols=PROTOCOLS,
            assignment=b"a",
            last_heartbeat_ms=0,
        )
        for i in range(count)
    ]
    return GroupMetadataRecord(GROUP, state, 0, "consumer", "range", 1, "member-0", members)


def test_last_members_rejoining_a_group_over_max_size_are_kicked_out():
    h = Harness(GroupConfig(max_size=3))
    h.apply(h.co.load([snapshot(5)], 0))
    assert h.group().state == GroupState.PREPARING_REBALANCE  # loaded over capacity
    tokens = [h.join(f"member-{i}", rebalance=10000) for i in range(5)]
    assert [h.join_result(t).error_code for t in tokens[3:]] == [81, 81]
    assert len(h.group().members) == 3
    h.advance(9999)
    assert h.result(tokens[0]) is None
    h.advance(1)
    assert [h.join_result(t).error_code for t in tokens[:3]] == [0, 0, 0]
    assert set(h.group().members) == {"member-0", "member-1", "member-2"}


# -- the initial delay and join completion (spec 4.5) ------------------------------------------


def test_second_member_during_initial_delay_extends_it_by_one_delay():
    h = Harness()
    first = h.join(rebalance=9000)
    h.advance(2999)
    second = h.join(rebalance=9000)
    h.advance(3000)  # t = 5999
    assert h.result(first) is None and h.result(second) is None
    h.advance(1)  # t = 6000
    assert h.join_result(first).error_code == h.join_result(second).error_code == ErrorCode.NONE


def test_initial_delay_is_capped_by_the_rebalance_timeout():
    h = Harness()
    first, second = h.join(rebalance=6000), h.join(rebalance=6000)
    h.advance(3001)
    third = h.join(rebalance=6000)
    h.advance(2998)  # t = 5999
    assert h.result(first) is None
    h.advance(1)  # t = 6000: the rebalance timeout, even though a member just arrived
    assert all(h.join_result(t).error_code == ErrorCode.NONE for t in (first, second, third))


def test_initial_rebalance_waits_for_its_timer_even_when_everyone_joined():
    h = Harness()
    first = h.join()
    again = h.join("client-1")  # the same member again: everyone has joined
    assert (
        h.join_result(first).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    )  # superseded, answered so it cannot hang
    h.advance(2999)
    assert h.result(again) is None
    h.advance(1)
    assert h.join_result(again).generation_id == 1


def test_join_completion_removes_dynamic_members_that_did_not_rejoin():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, rebalance=10000)
    token = h.join(leader, rebalance=10000)
    h.advance(9999)
    assert h.result(token) is None
    h.advance(1)
    r = h.join_result(token)
    assert (r.error_code, r.generation_id, r.members) == (
        0,
        generation + 1,
        [MemberMetadata(leader, None, b"range-metadata")],
    )
    assert follower not in h.group().members
    assert any(isinstance(e, MemberRemoved) and e.member_id == follower for e in h.events)


def test_join_completion_of_a_dead_group_does_nothing():
    h = Harness()
    token = h.join()
    h.group().transition(DEAD, 0)
    h.advance(3000)
    assert h.result(token) is None and h.group().generation_id == 0


def test_no_rejoined_static_members_keep_extending_the_join_phase():
    h = Harness()
    first = h.join(instance="first", session=30000, rebalance=10000)
    h.advance(3000)
    first_id = h.join_result(first).member_id
    second = h.join(instance="second", session=30000, rebalance=10000)
    assert h.result(second) is None  # CompletingRebalance -> PreparingRebalance
    rejoin = h.join(first_id, "first", session=30000, rebalance=10000)
    assert h.join_result(rejoin).generation_id == h.join_result(second).generation_id == 2
    second_id = h.join_result(second).member_id
    h.sync(first_id, 2, "first", [(first_id, b"x"), (second_id, b"y")])
    h.sync(second_id, 2, "second")
    # A dynamic member joins and leaves again: a rebalance no static member rejoins.
    newcomer = h.join(rebalance=10000)
    h.leave("client-3")
    assert h.join_result(newcomer).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    start = h.now
    h.advance(10000)
    assert h.group().state == GroupState.PREPARING_REBALANCE
    assert h.co.timer_deadline(join_key(GROUP)) == start + 20000
    h.advance(10000)
    assert h.co.timer_deadline(join_key(GROUP)) == start + 30000
    assert len(h.group().members) == 2 and h.group().generation_id == 2
    first_again = h.join(first_id, "first", rebalance=10000)
    assert h.result(first_again) is None
    second_again = h.join(second_id, "second", rebalance=10000)
    assert h.join_result(first_again).generation_id == 3
    assert h.join_result(second_again).generation_id == 3


def test_generation_increments_on_every_rebalance():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    assert generation == 1
    token = h.join(leader)
    assert h.join_result(token).generation_id == 2  # alone: completes at once


def test_pending_member_blocks_join_completion_until_it_joins():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    pending = h.join_result(h.join(version=5)).member_id
    rejoin = h.join(leader, version=5)
    assert h.result(rejoin) is None  # a pending id has not joined yet
    token = h.join(pending, version=5)
    assert h.join_result(rejoin).generation_id == h.join_result(token).generation_id == 2


def test_pending_member_timing_out_completes_the_join():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.join_result(h.join(version=5, session=6000))
    rejoin = h.join(leader, version=5)
    h.advance(5999)
    assert h.result(rejoin) is None
    h.advance(1)
    assert h.join_result(rejoin).generation_id == 2


# -- rejoin decisions ---------------------------------------------------------------------------


def test_join_from_unchanged_follower_does_not_rebalance():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    r = h.join_result(h.join(follower))
    assert (r.error_code, r.generation_id, r.leader, r.members) == (
        ErrorCode.NONE,
        generation,
        leader,
        [],
    )
    assert h.group().state == GroupState.STABLE


def test_join_from_unchanged_leader_rebalances():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    token = h.join(leader)
    assert h.result(token) is None
    assert h.group().state == GroupState.PREPARING_REBALANCE
    h.join(follower)
    assert h.join_result(token).generation_id == generation + 1


def test_join_with_changed_metadata_in_stable_rebalances():
    h = Harness()
    (_leader, follower), _ = h.stable_group(2)
    token = h.join(follower, protocols=[("range", b"new")])
    assert h.result(token) is None
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_join_with_changed_metadata_in_completing_rebalance_rebalances():
    h = Harness()
    h.join()
    b = h.join()
    h.advance(6000)
    follower = h.join_result(b).member_id
    parked_sync = h.sync(follower, 1)
    assert h.result(parked_sync) is None
    token = h.join(follower, protocols=[("range", b"changed")])
    assert h.result(token) is None
    assert h.sync_result(parked_sync).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.group().state == GroupState.PREPARING_REBALANCE


def test_only_member_rejoining_with_new_protocols_while_completing_gets_a_new_generation():
    # Kafka: testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance
    h = Harness()
    token = h.join(protocols=[("range", b"r")])
    h.advance(3000)
    member_id = h.join_result(token).member_id
    protocols = [("range", b"r"), ("roundrobin", b"rr")]
    r = h.join_result(h.join(member_id, protocols=protocols))  # everyone rejoined: at once
    assert (r.error_code, r.generation_id, r.member_id) == (ErrorCode.NONE, 2, member_id)
    assert h.group().state == GroupState.COMPLETING_REBALANCE
    assert h.group().members[member_id].protocols == protocols


def test_join_with_same_metadata_in_completing_rebalance_repeats_the_generation():
    h = Harness()
    a, b = h.join(), h.join()
    h.advance(6000)
    leader, follower = h.join_result(a).member_id, h.join_result(b).member_id
    again = h.join_result(h.join(leader))
    assert (again.generation_id, again.leader) == (1, leader)
    assert {m.member_id for m in again.members} == {leader, follower}  # the leader gets the list
    assert h.join_result(h.join(follower)).members == []
    assert h.group().state == GroupState.COMPLETING_REBALANCE


def test_rejoin_in_preparing_rebalance_updates_the_members_protocols():
    h = Harness()
    (leader, follower), _ = h.stable_group(2)
    h.join(leader)
    h.join(follower, protocols=[("roundrobin", b"rr2")])
    assert h.group().members[follower].protocols == [("roundrobin", b"rr2")]
    assert h.group().protocol_name == "roundrobin"
