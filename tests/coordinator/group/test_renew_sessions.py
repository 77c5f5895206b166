"""A coordinator that could not be reached and is back (a cluster node renewing a lease
that had run out: it refused every request meanwhile) gives its members a whole session
from then on, as a load does, instead of expiring them for heartbeats it refused."""

from __future__ import annotations

from coordinator.group.classic.states import GroupState
from coordinator.group.deadlines import consumer_session_key

from .consumer.harness import ConsumerHarness
from .harness import GROUP, Harness

SESSION = 10_000


def test_members_of_a_classic_group_get_a_whole_session_from_the_renewal():
    h = Harness()
    (a, b), generation = h.stable_group(2, session=SESSION)
    h.advance(SESSION - 1)  # both all but expired: their heartbeats were refused
    h.apply(h.co.renew_sessions(lambda g: g == GROUP, h.now))
    h.advance(SESSION - 1)
    assert h.group().state is GroupState.STABLE and set(h.group().members) == {a, b}
    assert h.heartbeat(a, generation) == h.heartbeat(b, generation) == 0


def test_only_the_groups_named_are_renewed():
    h = Harness()
    h.stable_group(2, session=SESSION)
    h.advance(SESSION - 1)
    h.apply(h.co.renew_sessions(lambda g: g != GROUP, h.now))
    h.advance(1)
    assert not h.group().members  # expired, as without a renewal


def test_members_of_a_consumer_group_get_a_whole_session_from_the_renewal():
    h = ConsumerHarness()
    h.member("a").join()
    h.advance(40_000)
    h.apply(h.co.renew_sessions(lambda g: g == GROUP, h.now))
    assert h.co.timer_deadline(consumer_session_key(GROUP, "a")) == h.now + 45_000


def test_with_a_horizon_only_the_sessions_ending_within_it_are_renewed():
    h = Harness()
    (a, b), generation = h.stable_group(2, session=SESSION)
    h.advance(4000)
    assert h.heartbeat(b, generation) == 0
    b_ends = h.now + SESSION
    h.advance(4000)  # a's session ends in 2,000 ms, b's in 6,000
    h.apply(h.co.renew_sessions(lambda g: g == GROUP, h.now, ending_within_ms=3000))
    members = h.group().members
    assert h.co.timer_deadline(members[a].heartbeat_key) == h.now + SESSION
    assert h.co.timer_deadline(members[b].heartbeat_key) == b_ends
