"""The state table and the group's bookkeeping (Kafka's ClassicGroupTest)."""

from __future__ import annotations

import pytest

from coordinator.group.classic.group import ClassicGroup
from coordinator.group.classic.member import Member
from coordinator.group.classic.states import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    LEGAL_SOURCES,
    PREPARING_REBALANCE,
    STABLE,
    GroupState,
    IllegalStateTransition,
    parse_state,
)
from protocol.errors import ErrorCode

E, PR, CR, S, D = EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD

# How to reach each state from a new (Empty) group through legal transitions.
PATHS: dict[GroupState, list[GroupState]] = {
    E: [],
    PR: [PR],
    CR: [PR, CR],
    S: [PR, CR, S],
    D: [D],
}


def group_in(state: GroupState) -> ClassicGroup:
    g = ClassicGroup("g")
    for step in PATHS[state]:
        g.transition(step, 0)
    return g


def member(member_id: str, protocols: list[str], instance: str | None = None) -> Member:
    return ClassicGroup("g").new_member(
        member_id,
        instance,
        "client",
        "/host",
        30000,
        10000,
        "consumer",
        [(name, name.encode()) for name in protocols],
    )


def test_transition_table_is_spec_4_2():
    assert {
        PR: {S, CR, E},
        CR: {PR},
        S: {CR},
        E: {PR},
        D: {S, PR, CR, E, D},
    } == LEGAL_SOURCES


@pytest.mark.parametrize(
    ("source", "target"),
    [(S, PR), (S, D), (CR, PR), (PR, D), (PR, E), (E, D), (CR, S), (PR, CR), (E, PR), (D, D)],
)
def test_legal_transition_changes_state_and_remembers_previous(source, target):
    g = group_in(source)
    g.transition(target, 42)
    assert (g.previous_state, g.state, g.state_timestamp_ms) == (source, target, 42)


@pytest.mark.parametrize(
    ("source", "target"),
    [(E, S), (S, S), (E, CR), (PR, PR), (PR, S), (CR, CR), (D, S), (D, PR), (D, CR), (D, E)],
)
def test_illegal_transition_raises_and_keeps_state(source, target):
    g = group_in(source)
    with pytest.raises(IllegalStateTransition):
        g.transition(target, 0)
    assert g.state is source


@pytest.mark.parametrize(("state", "expected"), [(E, True), (PR, False), (CR, True), (S, True)])
def test_can_rebalance_from_empty_completing_and_stable_only(state, expected):
    assert group_in(state).can_rebalance() is expected


def test_can_not_rebalance_when_dead():
    assert not group_in(D).can_rebalance()


def test_state_names_parse_case_insensitively():
    assert parse_state(" preparingrebalance ") is PR
    assert parse_state("STABLE") is S
    assert parse_state("nope") is None


def test_select_protocol_tie_goes_to_the_lexicographically_smallest_name():
    g = ClassicGroup("g")
    g.add(member("m1", ["range", "roundrobin"]))
    g.add(member("m2", ["roundrobin", "range"]))
    assert g.select_protocol() == "range"
    g.add(member("m3", ["roundrobin", "range"]))
    assert g.select_protocol() == "roundrobin"


def test_select_protocol_of_a_memberless_group_is_none():
    assert ClassicGroup("g").select_protocol() is None


def test_select_protocol_only_considers_protocols_every_member_supports():
    g = ClassicGroup("g")
    g.add(member("m1", ["range", "roundrobin"]))
    g.add(member("m2", ["range", "roundrobin"]))
    g.add(member("m3", ["roundrobin", "blah"]))
    assert g.select_protocol() == "roundrobin"


def test_supports_protocols():
    g = ClassicGroup("g")
    assert not g.supports_protocols("", [("range", b"")])  # Empty: type required
    assert not g.supports_protocols("consumer", [])  # Empty: a protocol required
    g.transition(PR, 0)
    g.add(member("m1", ["range", "roundrobin"]))
    assert g.supports_protocols("consumer", [("roundrobin", b""), ("foo", b"")])
    assert not g.supports_protocols("consumer", [("foo", b""), ("bar", b"")])
    assert not g.supports_protocols("connect", [("range", b"")])
    g.add(member("m2", ["roundrobin"]))
    assert not g.supports_protocols("consumer", [("range", b"")])
    assert g.supports_protocols("consumer", [("roundrobin", b"")])


def test_first_member_sets_protocol_type_and_leader():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"]))
    g.add(member("m2", ["range"]))
    assert (g.protocol_type, g.leader_id) == ("consumer", "m1")


def test_removing_the_leader_promotes_another_member():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"]))
    g.add(member("m2", ["range"]))
    g.remove("m1")
    assert g.leader_id == "m2"
    g.remove("m2")
    assert g.leader_id is None


def test_replace_group_instance_rekeys_member_leadership_and_pending_sync():
    g = ClassicGroup("g")
    m = member("old", ["range"], instance="i")
    g.add(m, join_token="join")
    m.sync_token = "sync"
    g.pending_sync_members.add("old")
    replaced, old_join, old_sync = g.replace_static_member("i", "old", "new")
    assert replaced is m and m.member_id == "new"
    assert (old_join, old_sync) == ("join", "sync")
    assert g.static_members == {"i": "new"} and set(g.members) == {"new"}
    assert g.leader_id == "new" and g.pending_sync_members == {"new"}
    assert g.num_members_awaiting_join == 0
    assert m.heartbeat_key == "heartbeat/g/new"


def test_cannot_add_pending_member_that_is_already_a_member():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"]))
    with pytest.raises(ValueError):
        g.add_pending_member("m1")


def test_adding_a_pending_member_removes_it_from_pending():
    g = ClassicGroup("g")
    g.add_pending_member("m1")
    g.add(member("m1", ["range"]))
    assert not g.pending_join_members
    g.add_pending_member("m2")
    g.remove("m2")
    assert not g.pending_join_members


def test_cannot_add_static_member_twice():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"], instance="i"))
    with pytest.raises(ValueError):
        g.add(member("m2", ["range"], instance="i"))


def test_removing_a_member_removes_it_from_pending_sync():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"]))
    g.pending_sync_members.add("m1")
    g.remove("m1")
    assert not g.pending_sync_members


def test_elect_new_joined_leader_when_the_leader_did_not_rejoin():
    g = ClassicGroup("g")
    g.add(member("leader", ["range"]))
    g.add(member("follower", ["range"]), join_token="t")
    assert g.maybe_elect_new_joined_leader()
    assert g.leader_id == "follower"


def test_elect_keeps_a_leader_that_rejoined():
    g = ClassicGroup("g")
    g.add(member("leader", ["range"]), join_token="t1")
    g.add(member("follower", ["range"]), join_token="t2")
    assert g.maybe_elect_new_joined_leader()
    assert g.leader_id == "leader"


def test_elect_fails_and_keeps_the_leader_when_nobody_rejoined():
    g = ClassicGroup("g")
    g.add(member("leader", ["range"]))
    assert not g.maybe_elect_new_joined_leader()
    assert g.leader_id == "leader"


def test_validate_member_codes():
    g = ClassicGroup("g")
    g.add(member("m1", ["range"], instance="i"))
    assert g.validate_member("m1", "i") == ErrorCode.NONE
    assert g.validate_member("m1", None) == ErrorCode.NONE
    assert g.validate_member("other", "i") == ErrorCode.FENCED_INSTANCE_ID
    assert g.validate_member("m1", "unknown-instance") == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.validate_member("other", None) == ErrorCode.UNKNOWN_MEMBER_ID


def test_awaiting_join_counter_follows_parking_and_removal():
    g = ClassicGroup("g")
    m1 = member("m1", ["range"])
    g.add(m1, join_token="t1")
    g.add(member("m2", ["range"]))
    assert not g.has_all_members_joined()
    assert g.update_member(g.members["m2"], [("range", b"")], 1, 1, "t2") is None
    assert g.has_all_members_joined()
    assert g.update_member(m1, [("range", b"")], 1, 1, "t3") == "t1"  # superseded
    assert g.num_members_awaiting_join == 2
    g.remove("m2")
    assert g.num_members_awaiting_join == 1
    g.add_pending_member("p")
    assert not g.has_all_members_joined()
