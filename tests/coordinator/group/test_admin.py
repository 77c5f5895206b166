"""DescribeGroups, ListGroups, DeleteGroups, loading and unloading, and timer hygiene."""

from __future__ import annotations

from coordinator.group import Cancel, GroupConfig, GroupCoordinator
from coordinator.group.classic.states import DEAD, GroupState
from coordinator.group.deadlines import heartbeat_key, join_key
from coordinator.group.records import (
    GroupDeletedRecord,
    GroupMetadataRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
)
from coordinator.group.results import (
    DescribedGroup,
    DescribedMember,
    GroupError,
    JoinGroupResult,
    PartitionOffset,
    TopicOffsets,
)
from protocol.errors import ErrorCode

from .harness import GROUP, PROTOCOLS, Harness

# -- DescribeGroups ---------------------------------------------------------------------------


def test_describe_stable_group_shows_metadata_assignment_and_protocol():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    (d,) = h.co.describe_groups([GROUP])
    assert d == DescribedGroup(
        0,
        GROUP,
        "Stable",
        "consumer",
        "range",
        [
            DescribedMember(
                leader,
                None,
                "client",
                "/127.0.0.1",
                b"range-metadata",
                f"assignment-{leader}".encode(),
            )
        ],
    )


def test_describe_rebalancing_group_hides_metadata_and_protocol():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.join()  # PreparingRebalance
    (d,) = h.co.describe_groups([GROUP])
    assert (d.group_state, d.protocol_type, d.protocol_data) == (
        "PreparingRebalance",
        "consumer",
        "",
    )
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in d.members] == [
        (leader, b"", f"assignment-{leader}".encode()),
        ("client-2", b"", b""),  # the newcomer
    ]


def test_describe_unknown_group_is_dead_with_no_error():
    assert Harness().co.describe_groups(["nope"]) == [DescribedGroup(0, "nope", "Dead", "", "", [])]


def test_describe_static_member_shows_its_instance_id():
    h = Harness()
    h.stable_group(1, static=True)
    assert h.co.describe_groups([GROUP])[0].members[0].group_instance_id == "instance-0"


def test_describe_empty_group_keeps_its_protocol_type():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.leave(leader)
    (d,) = h.co.describe_groups([GROUP])
    assert (d.group_state, d.protocol_type, d.protocol_data, d.members) == (
        "Empty",
        "consumer",
        "",
        [],
    )


# -- ListGroups --------------------------------------------------------------------------------


def test_list_groups_includes_every_state_and_filters_case_insensitively():
    h = Harness()
    h.stable_group(1)
    h.join(group="rebalancing")
    h.commit({("t", 0): 1}, group="simple")
    listed = {
        (g.group_id, g.protocol_type, g.group_state, g.group_type) for g in h.co.list_groups([], [])
    }
    assert listed == {
        (GROUP, "consumer", "Stable", "classic"),
        ("rebalancing", "consumer", "PreparingRebalance", "classic"),
        ("simple", "", "Empty", "classic"),
    }
    assert [g.group_id for g in h.co.list_groups(["stable", "EMPTY"], [])] == [GROUP, "simple"]
    assert len(h.co.list_groups([], ["Classic"])) == 3
    assert h.co.list_groups([], ["consumer"]) == []


# -- DeleteGroups ------------------------------------------------------------------------------


def test_delete_empty_group_deletes_it_and_its_offsets():
    h = Harness()
    h.commit({("t", 0): 1})
    results, effects = h.delete_groups(GROUP)
    assert results == [GroupError(GROUP, ErrorCode.NONE)]
    assert effects.records == [GroupDeletedRecord(GROUP)]
    assert GROUP not in h.co.groups
    assert h.co.fetch_offsets(GROUP, [("t", [0])], 0).topics == [
        TopicOffsets("t", [PartitionOffset(0, -1, -1, "")])
    ]


def test_delete_non_empty_group_is_refused():
    h = Harness()
    h.stable_group(1)
    assert h.delete_groups(GROUP)[0] == [GroupError(GROUP, ErrorCode.NON_EMPTY_GROUP)]


def test_delete_group_is_refused_while_it_rebalances():
    # Kafka: testValidateDeleteGroup (Stable: test_delete_non_empty_group_is_refused)
    h = Harness()
    h.join()
    assert h.group().state == GroupState.PREPARING_REBALANCE
    assert h.delete_groups(GROUP)[0] == [GroupError(GROUP, ErrorCode.NON_EMPTY_GROUP)]
    h.advance(3000)
    assert h.group().state == GroupState.COMPLETING_REBALANCE
    assert h.delete_groups(GROUP)[0] == [GroupError(GROUP, ErrorCode.NON_EMPTY_GROUP)]
    assert GROUP in h.co.groups


def test_delete_unknown_dead_or_unnamed_group_is_group_id_not_found():
    h = Harness()
    h.commit({("t", 0): 1}, group="dead")
    h.group("dead").transition(DEAD, 0)
    not_found = ErrorCode.GROUP_ID_NOT_FOUND
    assert h.delete_groups("nope", "", "dead")[0] == [
        GroupError("nope", not_found),
        GroupError("", not_found),
        GroupError("dead", not_found),
    ]


def test_deleted_group_restarts_at_generation_one():
    h = Harness()
    (leader,), _ = h.stable_group(1)
    h.leave(leader)
    assert h.group().generation_id == 2
    h.delete_groups(GROUP)
    token = h.join()
    h.advance(3000)
    assert h.join_result(token).generation_id == 1


# -- load and unload ---------------------------------------------------------------------------


def member_record(member_id: str, last_heartbeat: int, session: int = 10000) -> MemberRecord:
    return MemberRecord(
        member_id,
        None,
        "client",
        "/host",
        30000,
        session,
        "consumer",
        PROTOCOLS,
        b"assigned",
        last_heartbeat,
    )


def test_load_restores_stable_group_with_remaining_sessions():
    h = Harness(now=100000)
    snapshot = GroupMetadataRecord(
        GROUP,
        "Stable",
        50000,
        "consumer",
        "range",
        4,
        "m2",
        [member_record("m1", 95000), member_record("m2", 99000)],
    )
    h.apply(h.co.load([snapshot], h.now))
    g = h.group()
    assert (g.state, g.generation_id, g.leader_id, g.protocol_name) == (
        GroupState.STABLE,
        4,
        "m2",
        "range",
    )
    assert h.co.timer_deadline(heartbeat_key(GROUP, "m1")) == 105000
    assert h.co.timer_deadline(heartbeat_key(GROUP, "m2")) == 109000
    assert h.heartbeat("m1", 4) == ErrorCode.NONE
    sync = h.sync_result(h.sync("m2", 4))
    assert sync.assignment == b"assigned"


def test_load_with_a_heartbeat_from_the_future_grants_a_full_session():
    h = Harness(now=1000)
    snapshot = GroupMetadataRecord(
        GROUP, "Stable", 0, "consumer", "range", 1, "m1", [member_record("m1", 50000)]
    )
    h.apply(h.co.load([snapshot], h.now))
    assert h.co.timer_deadline(heartbeat_key(GROUP, "m1")) == 11000


def test_load_of_a_group_saved_mid_rebalance_rebalances_it():
    h = Harness()
    snapshot = GroupMetadataRecord(
        GROUP, "CompletingRebalance", 0, "consumer", "range", 3, "m1", [member_record("m1", 0)]
    )
    h.apply(h.co.load([snapshot], 0))
    assert h.group().state == GroupState.PREPARING_REBALANCE
    assert h.heartbeat("m1", 3) == ErrorCode.REBALANCE_IN_PROGRESS
    r = h.join_result(h.join("m1"))
    assert r.generation_id == 4


def test_load_over_max_size_rebalances():
    h = Harness(GroupConfig(max_size=1))
    snapshot = GroupMetadataRecord(
        GROUP,
        "Stable",
        0,
        "consumer",
        "range",
        1,
        "m0",
        [member_record("m0", 0), member_record("m1", 0)],
    )
    h.apply(h.co.load([snapshot], 0))
    assert (h.group().state, len(h.group().members)) == (GroupState.PREPARING_REBALANCE, 2)


def test_load_replays_offsets_deletions_and_group_tombstones():
    h = Harness()
    records = [
        OffsetCommitRecord("a", "t", 0, 5, -1, "", 0, None),
        OffsetCommitRecord("a", "t", 1, 6, -1, "", 0, None),
        OffsetDeleteRecord("a", "t", 1),
        OffsetCommitRecord("a", "t", 0, 7, 3, "md", 10, None),
        GroupMetadataRecord("gone", "Empty", 0, "consumer", None, 2, None, []),
        OffsetCommitRecord("gone", "t", 0, 1, -1, "", 0, None),
        GroupDeletedRecord("gone"),
        GroupMetadataRecord("empty", "Empty", 77, "consumer", None, 5, None, []),
    ]
    h.apply(h.co.load(records, 100))
    assert set(h.co.groups) == {"a", "empty"}
    assert h.co.fetch_offsets("a", None, 0).topics == [
        TopicOffsets("t", [PartitionOffset(0, 7, 3, "md", ErrorCode.NONE)])
    ]
    assert (h.group("a").state, h.group("a").protocol_type) == (GroupState.EMPTY, None)
    e = h.group("empty")
    assert (e.state, e.generation_id, e.protocol_type, e.state_timestamp_ms) == (
        GroupState.EMPTY,
        5,
        "consumer",
        77,
    )


def test_records_rebuild_the_same_groups():
    h = Harness()
    (leader, _follower), generation = h.stable_group(2)
    h.commit({("t", 0): 9}, member_id=leader, generation=generation, metadata="m")
    h.commit({("t", 0): 1}, group="simple")
    fresh = GroupCoordinator(GroupConfig())
    fresh.load(h.records, h.now)
    before, after = h.group(), fresh.groups[GROUP]
    assert (after.state, after.generation_id, after.leader_id, after.protocol_name) == (
        before.state,
        before.generation_id,
        before.leader_id,
        before.protocol_name,
    )
    assert {m: x.assignment for m, x in after.members.items()} == {
        m: x.assignment for m, x in before.members.items()
    }
    assert fresh.fetch_offsets(GROUP, None, 0) == h.co.fetch_offsets(GROUP, None, 0)
    assert "simple" in fresh.groups


def test_shutdown_answers_parked_requests_not_coordinator_and_kills_groups():
    h = Harness()
    (leader, _follower), _generation = h.stable_group(2)
    join = h.join(leader)
    other = Harness()
    _a, b = other.join(), other.join()
    other.advance(6000)
    follower_sync = other.sync(other.join_result(b).member_id, 1)
    effects = h.apply(h.co.shutdown())
    assert h.join_result(join) == JoinGroupResult(ErrorCode.NOT_COORDINATOR, member_id=leader)
    assert h.group().state is DEAD
    assert all(isinstance(t, Cancel) for t in effects.timers) and not h.timers
    other.apply(other.co.shutdown())
    assert other.sync_result(follower_sync).error_code == ErrorCode.NOT_COORDINATOR


# -- timers ----------------------------------------------------------------------------------


def test_unknown_timer_key_is_ignored():
    assert GroupCoordinator(GroupConfig()).fire_timer(join_key("nope"), 10**9).replies == []


def test_join_timer_fired_after_the_phase_completed_is_ignored():
    h = Harness()
    token = h.join()
    h.advance(3000)
    assert h.result(token) is not None
    effects = h.co.fire_timer(join_key(GROUP), h.now + 10**6)
    assert effects.replies == effects.events == effects.timers == []


def test_join_timer_fired_early_is_ignored():
    h = Harness()
    token = h.join()
    assert h.co.fire_timer(join_key(GROUP), 2999).replies == []
    assert h.result(token) is None
    h.advance(3000)
    assert h.result(token) is not None


def test_ids_with_slashes_are_escaped_in_timer_keys():
    h = Harness()
    token = h.join(group="a/b", client_id="c/d")
    h.advance(3000)
    r = h.join_result(token)
    assert r.member_id == "c/d-1"
    assert h.co.timer_deadline("heartbeat/a%2Fb/c%2Fd-1") == 3000 + 10000
    assert h.co.timer_deadline("join/a%2Fb") is None
