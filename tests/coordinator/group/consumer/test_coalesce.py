"""Target assignments coalesced (coalesce.py): heartbeats that need a new target wait for
one computation shared by all the changes of a turn, or of a burst within the assignment
interval, and are all answered from it."""

from __future__ import annotations

from coordinator.group import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from coordinator.group.events import TargetAssignmentComputed
from protocol.errors import ErrorCode

from .harness import ConsumerHarness

QUIET_MS = 50


def _harness(interval_ms: int, partitions: int = 12) -> ConsumerHarness:
    config = GroupConfig(consumer=ConsumerGroupConfig(assignment_interval_ms=interval_ms))
    return ConsumerHarness(config=config, topics={"orders": partitions}, keep_interval=True)


def _join(h: ConsumerHarness, member_id: str) -> int:
    """Send a join without ending the turn; its token."""
    token = h._token()
    req = ConsumerHeartbeatInput(
        group_id="group",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["orders"],
        owned={},
    )
    h.apply(h.co.consumer_group_heartbeat(token, req, h.now))
    return token


def _beat(h: ConsumerHarness, member_id: str, epoch: int, owned: set[int]) -> int:
    """A heartbeat reporting what the member owns, without ending the turn; its token."""
    token = h._token()
    req = ConsumerHeartbeatInput(
        group_id="group",
        member_id=member_id,
        member_epoch=epoch,
        owned={"orders": frozenset(owned)},
    )
    h.apply(h.co.consumer_group_heartbeat(token, req, h.now))
    return token


def _computed(h: ConsumerHarness) -> list[TargetAssignmentComputed]:
    return [e for e in h.events if isinstance(e, TargetAssignmentComputed)]


def test_joins_of_one_turn_share_one_target_and_are_answered_from_it() -> None:
    h = _harness(interval_ms=0)
    tokens = {m: _join(h, m) for m in ("a", "b", "c")}
    assert not any(t in h.replies for t in tokens.values())  # held until the turn ends
    assert h.co.consumer_group("group").state.value == "Assigning"
    h.advance(0)
    [computed] = _computed(h)
    assert (computed.group_epoch, computed.members) == (3, 3)
    answers = {m: h.replies[t] for m, t in tokens.items()}
    assert all(isinstance(r, ConsumerHeartbeatResult) for r in answers.values())
    assert all(r.error_code == 0 for r in answers.values())
    # Nobody is given what another must give back: each gets its final share at once.
    assert {r.member_epoch for r in answers.values()} == {3}
    assert sorted(len(r.assignment["orders"]) for r in answers.values()) == [4, 4, 4]
    assert h.co.consumer_group("group").state.value == "Stable"


def test_a_lone_join_waits_only_the_quiet_time() -> None:
    h = _harness(interval_ms=1000)
    token = _join(h, "a")
    h.advance(QUIET_MS - 1)
    assert token not in h.replies
    h.advance(1)
    assert h.replies[token].assignment == {"orders": frozenset(range(12))}


def test_a_burst_longer_than_the_interval_still_gets_one_target() -> None:
    h = _harness(interval_ms=1000, partitions=100)
    tokens = []
    for i in range(50):  # a join every 40 ms for 2 s: the group never goes quiet
        tokens.append(_join(h, f"m{i}"))
        h.advance(40)
        assert not _computed(h), h.now
    h.advance(2 * QUIET_MS)  # quiet for QUIET_MS, checked every QUIET_MS
    [computed] = _computed(h)
    assert computed.members == 50
    answers = [h.replies[t] for t in tokens]
    # Every joiner's first answer is its final share: nobody must give anything back.
    assert {r.member_epoch for r in answers} == {50}
    assert sorted(len(r.assignment["orders"]) for r in answers) == [2] * 50


def test_joiners_wait_at_most_the_heartbeat_interval() -> None:
    h = _harness(interval_ms=1000, partitions=400)
    first = _join(h, "m0")
    i = 1
    while first not in h.replies:  # a group that never goes quiet
        h.advance(40)
        _join(h, f"m{i}")
        i += 1
    assert h.now == 5000  # the heartbeat interval after the first held join
    assert h.replies[first].error_code == 0 and len(_computed(h)) == 1


def test_a_known_members_heartbeat_waits_at_most_the_interval() -> None:
    h = _harness(interval_ms=1000)
    a = _join(h, "a")
    h.advance(QUIET_MS)
    assert h.replies[a].member_epoch == 1
    beat = None
    for i in range(40):  # joins every 40 ms for 1.6 s; a heartbeats among the first
        _join(h, f"j{i}")
        if i == 2:
            beat = _beat(h, "a", 1, set(range(12)))
        h.advance(40)
        if h.now < QUIET_MS + 1000:  # the interval from the first held join
            assert beat is None or beat not in h.replies
    assert beat is not None and beat in h.replies
    # Answered from the target there was (epoch 1, all its partitions): no new target yet.
    assert h.replies[beat].member_epoch == 1 and not _computed(h)[1:]


def test_a_member_gone_while_its_heartbeat_waits_is_told_so() -> None:
    # A session shorter than the wait (no valid configuration has one: the answer must
    # still come).
    consumer = ConsumerGroupConfig(
        assignment_interval_ms=1000,
        session_timeout_ms=30,
        min_session_timeout_ms=1,
        heartbeat_interval_ms=10,
        min_heartbeat_interval_ms=1,
    )
    h = ConsumerHarness(
        config=GroupConfig(consumer=consumer), topics={"orders": 12}, keep_interval=True
    )
    b = _join(h, "b")
    h.advance(40)  # its session ran out while its join waited
    assert "b" not in h.co.consumer_group("group").members
    h.advance(3 * QUIET_MS)
    assert h.replies[b].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_waiting_heartbeats_are_answered_not_coordinator_on_unload_and_shutdown() -> None:
    h = _harness(interval_ms=1000)
    token = _join(h, "a")
    h.apply(h.co.unload(lambda group_id: True, h.now))
    assert h.replies[token].error_code == ErrorCode.NOT_COORDINATOR
    h = _harness(interval_ms=1000)
    token = _join(h, "a")
    h.apply(h.co.shutdown())
    assert h.replies[token].error_code == ErrorCode.NOT_COORDINATOR


def test_the_state_counts_agree_with_the_members() -> None:
    """The group's state is kept by counting (no scan per heartbeat): after every step of
    a group that grows, shrinks and reconciles, the counts say what a scan says."""
    h = _harness(interval_ms=0)
    members = [h.member(f"m{i}") for i in range(5)]
    g = None
    for step in range(12):
        m = members[step % 5]
        if step == 7:
            m.leave()
        else:
            m.join() if m.epoch == 0 else m.beat()
        g = h.co.consumer_group("group")
        scanned = sum(m.is_reconciled_to(g.assignment_epoch) for m in g.members.values())
        assert g.reconciled == scanned
        assert sum(g.assignors.values()) == sum(1 for x in g.members.values() if x.server_assignor)
    assert g is not None
