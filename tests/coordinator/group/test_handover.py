"""A group handed over alive (handover.py): the next owner knows the members that joined
since the last stored generation and the pending member ids, gives each member what was
left of its session rather than a whole one, and finishes the interrupted rebalance as soon
as an absent member's session would have run out at the old owner."""

from __future__ import annotations

from dataclasses import replace

from coordinator.group.classic.states import GroupState
from coordinator.group.deadlines import consumer_session_key
from coordinator.group.handover import GroupHandover
from coordinator.group.records import GroupMetadataRecord
from coordinator.group.results import JoinGroupResult
from protocol.errors import ErrorCode

from .consumer.harness import ConsumerHarness, settle
from .harness import GROUP, Harness

SESSION = 10_000
GAP = 300  # from the release to the next owner's load
MAX_AGE = 6_000


def hand_over(h: Harness) -> tuple[GroupMetadataRecord, GroupHandover]:
    """What the releasing node stores (its snapshot beside its hand-over), then unloads."""
    [(snapshot, handover)] = h.co.handover(lambda g: g == GROUP, h.now)
    h.apply(h.co.unload(lambda g: g == GROUP, h.now))
    assert snapshot is not None
    return snapshot, handover


def next_owner(
    h: Harness,
    snapshot: GroupMetadataRecord,
    handover: GroupHandover | None,
    age: int = GAP,
) -> Harness:
    """Another node loads the group ``age`` ms after the hand-over (the store's records, the
    release's snapshot last), as ``cluster/membership.py`` loads a partition it took."""
    other = Harness()
    other.now = h.now + age
    handovers = [] if handover is None else [replace(handover, age_ms=age)]
    records = [*h.stored, snapshot]
    other.apply(other.co.load(records, other.now, True, handovers, MAX_AGE))
    return other


def rebalancing_with_an_absent_member(h: Harness) -> dict[str, str]:
    """A Stable group of a, b, c; c goes silent; d joins (KIP-394, so its id was handed out
    here and is in no stored snapshot); a, b rejoin; e has an id and has not joined with it
    yet. Returns the member ids and the generation."""
    (a, b, c), generation = h.stable_group(3, session=SESSION)
    h.advance(3000)
    assert h.heartbeat(a, generation) == h.heartbeat(b, generation) == 0
    required = h.join_result(h.join(version=4, session=SESSION))
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED
    d = required.member_id
    assert h.result(h.join(d, version=4, session=SESSION)) is None  # parked
    assert h.result(h.join(a, session=SESSION)) is None
    assert h.result(h.join(b, session=SESSION)) is None
    e = h.join_result(h.join(version=4, session=SESSION)).member_id
    h.advance(2000)
    assert h.group().state is GroupState.PREPARING_REBALANCE  # waiting for c
    return {"a": a, "b": b, "c": c, "d": d, "e": e, "generation": str(generation)}


def deadline_of(h: Harness, member_id: str) -> int | None:
    return h.co.timer_deadline(h.group().members[member_id].heartbeat_key)


def test_the_next_owner_finishes_the_rebalance_when_the_absent_members_session_ends():
    h = Harness()
    ids = rebalancing_with_an_absent_member(h)
    c_ends = deadline_of(h, ids["c"])
    assert c_ends is not None
    snapshot, handover = hand_over(h)
    assert snapshot.state == GroupState.PREPARING_REBALANCE.value
    assert {m.member_id for m in snapshot.members} == {ids[k] for k in "abcd"}

    other = next_owner(h, snapshot, handover)
    # The members that rejoined at the old owner, d among them, rejoin with their ids.
    tokens = [
        other.join(ids["a"], session=SESSION),
        other.join(ids["b"], session=SESSION),
        other.join(ids["d"], version=4, session=SESSION),
        other.join(ids["e"], version=4, session=SESSION),  # a pending id, known here
    ]
    assert [other.result(t) for t in tokens] == [None] * 4
    # The join phase waits for c until its session would have run out at the old owner
    # (the same clock here), not for a whole session from the load.
    other.advance_to(c_ends - 1)
    assert other.result(tokens[0]) is None
    other.advance_to(c_ends)
    results = [other.join_result(t) for t in tokens]
    assert {r.error_code for r in results} == {0}
    assert {r.member_id for r in results} == {ids[k] for k in "abde"}
    assert results[0].generation_id == int(ids["generation"]) + 1
    assert set(other.group().members) == {ids[k] for k in "abde"}
    assert c_ends < other.now - GAP + SESSION  # sooner than a whole session would allow


def test_without_a_hand_over_the_new_member_is_unknown_and_the_absent_one_gets_a_whole_session():
    h = Harness()
    ids = rebalancing_with_an_absent_member(h)
    hand_over(h)  # (its unload: the old owner stops serving the group)
    stored = [r for r in h.stored if isinstance(r, GroupMetadataRecord)][-1]
    other = next_owner(h, stored, None)  # as after kill -9: the last stored snapshot
    assert other.join_result(other.join(ids["d"], version=4)).error_code == (
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert other.co.timer_deadline(other.group().members[ids["c"]].heartbeat_key) == (
        other.now + SESSION
    )


def test_members_keep_what_was_left_of_their_sessions_and_a_waiting_one_gets_a_whole_one():
    h = Harness()
    (a, b, c), generation = h.stable_group(3, session=SESSION)
    h.advance(4000)
    assert h.heartbeat(b, generation) == 0  # b: a whole session from here
    h.advance(2000)  # b has 8,000 ms left, c 4,000 ms
    assert h.result(h.join(a, session=SESSION)) is None  # the leader rejoins, and waits
    snapshot, handover = hand_over(h)
    assert handover.sessions[b] == 8000 and handover.sessions[c] == 4000

    other = next_owner(h, snapshot, handover)
    members = other.group().members
    deadline = other.co.timer_deadline
    assert deadline(members[b].heartbeat_key) == other.now + 8000 - GAP
    assert deadline(members[c].heartbeat_key) == other.now + 4000 - GAP
    assert deadline(members[a].heartbeat_key) == other.now + SESSION  # it was waiting


def test_a_stable_group_carries_on_and_its_silent_member_expires_when_it_would_have():
    h = Harness()
    (a, b, c), generation = h.stable_group(3, session=SESSION)
    h.advance(6000)
    assert h.heartbeat(a, generation) == h.heartbeat(b, generation) == 0
    snapshot, handover = hand_over(h)
    other = next_owner(h, snapshot, handover)
    assert other.group().state is GroupState.STABLE
    assert other.heartbeat(a, generation) == other.heartbeat(b, generation) == 0
    other.advance(SESSION - 6000 - GAP - 1)
    assert c in other.group().members
    other.advance(1)
    assert c not in other.group().members
    assert other.group().state is GroupState.PREPARING_REBALANCE


def test_a_hand_over_of_another_generation_is_ignored():
    h = Harness()
    (_, _, c), generation = h.stable_group(3, session=SESSION)
    h.advance(6000)
    snapshot, handover = hand_over(h)
    stale = replace(handover, generation_id=generation - 1, pending={"x-1": 5000})
    other = next_owner(h, snapshot, stale)
    member = other.group().members[c]
    assert other.co.timer_deadline(member.heartbeat_key) == other.now + SESSION
    assert other.join_result(other.join("x-1", version=4)).error_code == (
        ErrorCode.UNKNOWN_MEMBER_ID
    )


def test_a_hand_over_nobody_took_for_long_gives_whole_sessions_and_keeps_pending_ids():
    h = Harness()
    (_, _, c), _ = h.stable_group(3, session=SESSION)
    h.advance(6000)
    e = h.join_result(h.join(version=4, session=SESSION)).member_id
    snapshot, handover = hand_over(h)
    other = next_owner(h, snapshot, handover, age=MAX_AGE + 1)
    member = other.group().members[c]
    assert other.co.timer_deadline(member.heartbeat_key) == other.now + SESSION
    assert e in other.group().pending_join_members


def test_a_consumer_groups_members_keep_what_was_left_of_their_sessions():
    """KIP-848: the group's records are stored as it changes; the hand-over carries the
    sessions, so a member gone silent is fenced when its session would have ended at the
    old owner and its partitions go to the others, not a whole session later."""
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    settle([a, b])
    h.advance(20_000)
    a.beat()  # a: a whole session (45 s) from here; b: 25 s left
    [(snapshot, handover)] = h.co.handover(lambda g: g == GROUP, h.now)
    assert snapshot is None  # its records are in the store already
    h.apply(h.co.unload(lambda g: g == GROUP, h.now))

    other = ConsumerHarness(now=h.now + GAP)
    handed = replace(handover, age_ms=GAP)
    other.apply(other.co.load(h.records, other.now, True, [handed], MAX_AGE))
    a.h = other
    assert a.beat().error_code == 0
    other.advance(25_000 - GAP - 1)
    assert "b" in other.co.groups[GROUP].members
    other.advance(1)
    assert "b" not in other.co.groups[GROUP].members
    settle([a])
    assert len(a.partitions()) == 6


def test_a_consumer_group_without_a_hand_over_gives_whole_sessions():
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    h.advance(20_000)
    h.apply(h.co.unload(lambda g: g == GROUP, h.now))
    other = ConsumerHarness(now=h.now + GAP)
    other.apply(other.co.load(h.records, other.now, True))
    assert other.co.timer_deadline(consumer_session_key(GROUP, "a")) == other.now + 45_000


def test_a_group_known_only_by_its_offsets_has_nothing_to_hand_over():
    h = Harness()
    assert h.commit({("t", 0): 5}) == {("t", 0): 0}
    other = Harness()
    other.apply(other.co.load(h.stored, other.now))
    assert other.co.handover(lambda g: True, other.now) == []


def test_an_id_whose_answer_never_left_the_old_owner_does_not_hold_the_next_owners_join():
    """The JoinGroup that creates a group is answered once the group's first record is
    stored; a release in between fails that answer (NOT_COORDINATOR, no member id). Its
    client never learnt the id it was handed, so the next owner must not wait for it:
    it used to, for a whole rebalance timeout (cluster nodes spreading at start)."""
    h = Harness(store_at_once=False)
    created = h.join(version=4, session=SESSION, rebalance=SESSION)  # b: makes the group
    assert h.result(created) is None  # its MEMBER_ID_REQUIRED waits for the first write
    a = h.join_result(h.join(version=4, session=SESSION, rebalance=SESSION)).member_id
    assert h.result(h.join(a, version=4, session=SESSION, rebalance=SESSION)) is None
    snapshot, handover = hand_over(h)
    h.store(ok=False)  # the write is fenced: the partition is the next owner's
    assert not isinstance(h.result(created), JoinGroupResult)  # failed: no id learnt
    assert handover.pending == {}

    other = next_owner(h, snapshot, handover)
    assert other.group().pending_join_members == set()
    b = other.join_result(other.join(version=4, session=SESSION, rebalance=SESSION)).member_id
    rejoined = other.join(a, version=4, session=SESSION, rebalance=SESSION)
    assert other.result(rejoined) is None  # b's id is pending: the join phase waits for it
    joined = other.join(b, version=4, session=SESSION, rebalance=SESSION)
    # Everyone is in: the join completes now, not when a rebalance timeout runs out.
    results = [other.join_result(t) for t in (rejoined, joined)]
    assert [r.error_code for r in results] == [0, 0]
    assert {r.member_id for r in results} == {a, b}


def test_an_id_whose_answer_was_given_is_handed_over_while_the_group_is_being_stored():
    h = Harness(store_at_once=False)
    created = h.join(version=4, session=SESSION)
    given = h.join_result(h.join(version=4, session=SESSION)).member_id  # answered at once
    _, handover = hand_over(h)
    h.store(ok=False)
    assert not isinstance(h.result(created), JoinGroupResult)
    assert set(handover.pending) == {given}


def test_a_member_that_joined_without_an_id_and_was_not_answered_is_not_handed_over():
    """JoinGroup v0-3: a new member learns its id from the JoinGroup answer. The release
    answers its parked JoinGroup NOT_COORDINATOR, so it comes back as another new member;
    the next owner must not wait for the id it never learnt (a crash forgets it too)."""
    h = Harness()
    (a, b), generation = h.stable_group(2, session=SESSION)
    newcomer = h.join(session=SESSION)  # v3, no id: parked, and a rebalance starts
    assert h.result(h.join(a, session=SESSION)) is None
    assert h.group().state is GroupState.PREPARING_REBALANCE
    snapshot, handover = hand_over(h)
    assert h.join_result(newcomer).error_code == ErrorCode.NOT_COORDINATOR
    assert {m.member_id for m in snapshot.members} == set(handover.sessions) == {a, b}

    other = next_owner(h, snapshot, handover)
    tokens = [other.join(a, session=SESSION), other.join(b, session=SESSION)]
    results = [other.join_result(t) for t in tokens]  # everyone it knows is in: at once
    assert [r.error_code for r in results] == [0, 0]
    assert results[0].generation_id == generation + 1
    assert set(other.group().members) == {a, b}
