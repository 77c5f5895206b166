"""Nothing is visible before it is durable (issue 22): answers that show a generation,
leader or assignment wait for the group's snapshot to be stored, commits are fetched only
once stored, and a failed write rolls the group back to what was last stored."""

from __future__ import annotations

from coordinator.group.classic.states import GroupState
from coordinator.group.deadlines import join_key, sync_key
from coordinator.group.events import GroupReverted, OffsetsCommitted
from coordinator.group.records import GroupDeletedRecord, GroupMetadataRecord
from coordinator.group.results import JoinGroupResult
from protocol.errors import ErrorCode

from .harness import GROUP, Failed, Harness


def rebalance_in_flight(h: Harness) -> tuple[list[str], list[int]]:
    """A and B Stable at generation 1, stored; then the disk stalls, C joins and A and B
    rejoin, and the join phase completes with generation 2 written but not stored.
    Returns ([A, B], the three JoinGroup tokens)."""
    members, generation = h.stable_group(2)
    assert generation == 1
    h.store_at_once = False
    tokens = [h.join()] + [h.join(m) for m in members]  # all in: the join phase ends
    assert (h.group().state, h.group().generation_id) == (GroupState.COMPLETING_REBALANCE, 2)
    return members, tokens


def all_join_answers(h: Harness) -> list[JoinGroupResult]:
    return [r for r in h.replies.values() if isinstance(r, JoinGroupResult)]


def test_a_new_generation_is_answered_only_once_it_is_stored():
    h = Harness()
    members, tokens = rebalance_in_flight(h)
    assert [h.result(t) for t in tokens] == [None, None, None]
    # A repeated JoinGroup (it missed the answer) names the generation: it waits too.
    again = h.join(members[1])
    assert h.result(again) is None
    h.store()
    answers = [h.join_result(t) for t in [*tokens, again]]
    assert {(a.error_code, a.generation_id) for a in answers} == {(ErrorCode.NONE, 2)}


def test_answers_given_together_come_together_once_every_snapshot_before_them_is_stored():
    h = Harness()
    (leader, follower), joins = rebalance_in_flight(h)
    parked = h.sync(follower, 2)
    led = h.sync(leader, 2, assignments=[(leader, b"new-a"), (follower, b"new-b")])
    assert len(h.writes) == 2  # the join's snapshot, then the assignment's
    h.store()
    assert [h.join_result(t).generation_id for t in joins] == [2, 2, 2]
    assert (h.result(parked), h.result(led)) == (None, None)  # the assignment is not stored
    h.store()
    assert [h.sync_result(t).assignment for t in (parked, led)] == [b"new-b", b"new-a"]


def test_answers_waiting_for_a_write_that_fails_are_all_told_so():
    h = Harness()
    (leader, follower), _ = rebalance_in_flight(h)
    h.store()
    parked = h.sync(follower, 2)
    led = h.sync(leader, 2, assignments=[(leader, b"new-a"), (follower, b"new-b")])
    h.store(ok=False)
    assert [h.sync_result(t).error_code for t in (parked, led)] == [ErrorCode.NOT_COORDINATOR] * 2


def test_a_failed_write_rolls_the_group_back_and_nobody_sees_the_lost_generation():
    h = Harness()
    (a, b), tokens = rebalance_in_flight(h)
    h.store(ok=False)
    assert [h.join_result(t).error_code for t in tokens] == [ErrorCode.NOT_COORDINATOR] * 3
    g = h.group()
    assert (g.state, g.generation_id, set(g.members)) == (GroupState.STABLE, 1, {a, b})
    assert GroupReverted(GROUP, 1, "Stable", 2) in h.events
    assert join_key(GROUP) not in h.timers and sync_key(GROUP) not in h.timers
    # The members retry with their ids: still generation 1, the one that is stored.
    h.store_at_once = True
    retry = h.join_result(h.join(b))
    assert (retry.error_code, retry.generation_id) == (ErrorCode.NONE, 1)
    assert max(r.generation_id for r in all_join_answers(h)) == 1
    assert h.heartbeat(a, 1) == ErrorCode.NONE


def test_a_group_never_stored_is_forgotten_when_its_first_write_fails():
    h = Harness(store_at_once=False)
    token = h.join()
    assert GROUP in h.co.groups
    h.store(ok=False)
    assert GROUP not in h.co.groups
    assert h.join_result(token).error_code == ErrorCode.NOT_COORDINATOR
    assert not h.timers  # neither the join timer nor the member's session is left armed
    assert GroupReverted(GROUP, None, None, 0) in h.events


def test_a_snapshot_stored_after_its_group_was_rolled_back_is_overwritten():
    h = Harness()
    (leader, follower), _ = rebalance_in_flight(h)
    # The leader's assignment for generation 2 is written behind the join's snapshot.
    h.sync(leader, 2, assignments=[(leader, b"new-a"), (follower, b"new-b")])
    assert len(h.writes) == 2
    h.store(ok=False)  # generation 2's join snapshot: rolled back to generation 1
    h.store(ok=True)  # the assignment's snapshot lands anyway: the store now says 2...
    (corrective,) = h.writes  # ...so what memory holds is written after it
    (record,) = corrective.records
    assert isinstance(record, GroupMetadataRecord)
    assert (record.generation_id, record.state) == (1, "Stable")
    assert [m.assignment for m in record.members] == [
        f"assignment-{leader}".encode(),
        f"assignment-{follower}".encode(),
    ]


def test_describe_shows_an_assignment_only_once_it_is_stored():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    h.store_at_once = False
    h.join(leader)  # the leader asks for a new assignment
    h.join(follower)
    h.store()
    h.sync(leader, generation + 1, assignments=[(leader, b"x"), (follower, b"y")])
    (described,) = h.co.describe_groups([GROUP])
    assert [m.member_assignment for m in described.members] == [
        f"assignment-{leader}".encode(),
        f"assignment-{follower}".encode(),
    ]
    h.store()
    (described,) = h.co.describe_groups([GROUP])
    assert [m.member_assignment for m in described.members] == [b"x", b"y"]


def fetched(h: Harness, require_stable: bool = False) -> tuple[int, int]:
    """(offset, error) of t-0."""
    (topic,) = h.co.fetch_offsets(GROUP, [("t", [0])], h.now, require_stable).topics
    (p,) = topic.partitions
    return p.offset, p.error_code


def test_a_commit_is_fetched_only_once_it_is_stored():
    h = Harness()
    h.commit({("t", 0): 10})
    h.store_at_once = False
    assert h.commit({("t", 0): 20}) is None  # answered once it is stored
    commit = h.last_token
    assert fetched(h) == (10, ErrorCode.NONE)
    assert fetched(h, require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    h.store()
    assert h.result(commit).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert fetched(h) == (20, ErrorCode.NONE)
    assert fetched(h, require_stable=True) == (20, ErrorCode.NONE)


def test_a_commit_that_was_not_stored_is_never_fetched():
    h = Harness()
    h.commit({("t", 0): 10})
    h.store_at_once = False
    h.commit({("t", 0): 20})
    h.commit({("t", 0): 21})
    h.store(ok=False)
    assert isinstance(h.result(h.last_token - 1), Failed)  # told so, never acknowledged
    assert fetched(h, require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    h.store(ok=True)
    assert fetched(h, require_stable=True) == (21, ErrorCode.NONE)
    h.commit({("t", 0): 22})
    h.store(ok=False)
    assert fetched(h, require_stable=True) == (21, ErrorCode.NONE)


def test_deleting_an_offset_whose_commit_is_in_flight_deletes_that_commit_too():
    h = Harness(store_at_once=False)
    h.commit({("t", 0): 5})
    error, _, _ = h.delete_offsets([("t", [0])])
    assert error is None  # answered once the deletion is stored
    deletion = h.last_token
    h.store()  # the commit, then its deletion (written after it)
    h.store()
    assert h.result(deletion).error_code == ErrorCode.NONE
    assert fetched(h) == (-1, ErrorCode.NONE)


def test_offsets_with_a_commit_in_flight_do_not_expire():
    h = Harness()
    h.commit({("t", 0): 5})
    h.advance(10_000)
    h.store_at_once = False
    h.commit({("t", 0): 6})
    expiry = h.co.expire_offsets(h.now, retention_ms=1000)
    assert expiry.records == [] and GROUP in h.co.groups
    h.apply(expiry)
    h.store()
    assert fetched(h) == (6, ErrorCode.NONE)


def test_a_group_whose_deletion_was_not_stored_comes_back_with_its_offsets():
    h = Harness()
    h.commit({("t", 0): 5})
    h.store_at_once = False
    answer, effects = h.delete_groups(GROUP)
    assert answer is None  # answered once the deletion is stored
    assert any(isinstance(r, GroupDeletedRecord) for r in effects.records)
    assert GROUP not in h.co.groups
    h.store(ok=False)
    assert isinstance(h.result(h.last_token), Failed)
    assert h.group().state is GroupState.EMPTY
    assert fetched(h) == (5, ErrorCode.NONE)


def test_unloading_answers_what_waits_for_the_store():
    h = Harness()
    _, tokens = rebalance_in_flight(h)
    h.apply(h.co.shutdown())
    assert [h.join_result(t).error_code for t in tokens] == [ErrorCode.NOT_COORDINATOR] * 3


def test_a_member_whose_expiry_was_not_stored_is_not_expired_again_at_once():
    """The database is down while a session runs out: the expiry's write fails and the
    group is rolled back, but the member gets a whole session rather than a deadline in
    the past (which spun expire -> write fails -> roll back thousands of times a second)."""
    h = Harness()
    h.stable_group(1, session=10000)
    h.store_at_once = False
    h.advance(10001)  # the session runs out: the group empties, its write waits
    assert len(h.writes) == 1
    h.store(ok=False)  # ...and fails: rolled back, the member is back
    assert len(h.group().members) == 1
    h.advance(9000)
    assert h.writes == []  # not expired again, nothing written
    h.advance(1500)
    assert len(h.writes) == 1  # a whole session later, the expiry is tried once more


def test_offsets_committed_is_told_only_once_the_commit_is_stored():
    h = Harness()
    h.store_at_once = False
    assert h.commit({("t", 0): 5}) is None  # answered once stored
    assert not [e for e in h.events if isinstance(e, OffsetsCommitted)]
    h.store(ok=False)
    assert not [e for e in h.events if isinstance(e, OffsetsCommitted)]
    h.commit({("t", 0): 6, ("t", 1): 6})
    h.store()
    assert [e for e in h.events if isinstance(e, OffsetsCommitted)] == [OffsetsCommitted(GROUP, 2)]
