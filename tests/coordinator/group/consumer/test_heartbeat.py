"""ConsumerGroupHeartbeat against Kafka 4.x's rules: epochs, revocation before reassignment,
fencing, expiry, static members and leaving."""

from __future__ import annotations

import random

from coordinator.group.consumer.member import MemberState
from coordinator.group.consumer.requests import ConsumerHeartbeatInput
from coordinator.group.events import (
    MemberReconciled,
    MemberRemoved,
    RemovalCause,
    TargetAssignmentComputed,
)
from protocol.errors import ErrorCode

from .harness import ConsumerHarness, Member, owners_disjoint, settle

ALL = {("orders", p) for p in range(6)}


def test_the_first_member_gets_every_partition_at_epoch_one() -> None:
    h = ConsumerHarness()
    r = h.member("a").join()
    assert r.error_code == 0
    assert r.member_id == "a" and r.member_epoch == 1
    assert r.assignment == {"orders": frozenset(range(6))}
    assert r.heartbeat_interval_ms == 5000
    g = h.co.consumer_group("group")
    assert (g.group_epoch, g.assignment_epoch, g.state.value) == (1, 1, "Stable")


def test_a_partition_moves_only_after_its_owner_revoked_it() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    r = b.join()
    # Group epoch 2: b's target is half of a's partitions, all still owned by a.
    assert r.member_epoch == 2 and r.assignment == {}
    g = h.co.consumer_group("group")
    assert g.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    r = a.beat()  # a is asked to revoke three partitions, in its own epoch
    assert r.member_epoch == 1 and len(a.partitions()) == 3
    assert g.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert b.beat().assignment is None  # nothing freed yet: a has not said it revoked
    assert a.beat().member_epoch == 2  # a reports the revocation: next epoch
    r = b.beat()
    assert r.assignment is not None and len(b.partitions()) == 3
    assert a.partitions() | b.partitions() == ALL and owners_disjoint([a, b])
    assert g.state.value == "Stable"


def test_a_member_that_keeps_its_partitions_loses_none_when_another_joins() -> None:
    h = ConsumerHarness(topics={"orders": 12})
    members = [h.member(m) for m in "abc"]
    for m in members:
        m.join()
    settle(members)
    before = {m.member_id: m.partitions() for m in members}
    d = h.member("d")
    members.append(d)
    d.join()
    settle(members)
    assert {len(m.partitions()) for m in members} == {3}
    for m in members[:3]:
        kept = m.partitions()
        assert kept <= before[m.member_id]
        assert not set(m.revoked) & kept  # nothing revoked and given back


def test_an_epoch_ahead_of_the_coordinator_is_fenced() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    a.epoch = 5
    assert a.beat().error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_the_previous_epoch_is_accepted_with_a_subset_of_the_assignment() -> None:
    """The answer that moved the member on may have been lost (Kafka accepts it)."""
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    settle([a, b])
    g = h.co.consumer_group("group")
    m = g.members["a"]
    assert (m.previous_member_epoch, m.member_epoch) == (1, 2)
    lost = ConsumerHeartbeatInput("group", "a", 1, owned=dict(a.owned))
    assert h.send(lost).error_code == 0
    too_much = ConsumerHeartbeatInput("group", "a", 1, owned={"orders": frozenset(range(6))})
    assert h.send(too_much).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    unreported = ConsumerHeartbeatInput("group", "a", 1)
    assert h.send(unreported).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_a_fenced_member_rejoins_with_epoch_zero_and_its_id() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    settle([a, b])
    r = a.join()  # KAFKA-19233: epoch 0 with a known id is a rejoin
    assert r.error_code == 0 and r.member_epoch == 2 and len(a.partitions()) == 3


def test_unknown_members_and_groups() -> None:
    h = ConsumerHarness()
    r = h.send(ConsumerHeartbeatInput("group", "x", 1, owned={}))
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    h.member("a").join()
    r = h.send(ConsumerHeartbeatInput("group", "x", 1, owned={}))
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert r.member_id is None  # an error answer carries no member
    r = h.send(ConsumerHeartbeatInput("group", "x", -1))
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_invalid_requests() -> None:
    h = ConsumerHarness()

    def code(**kwargs: object) -> int:
        fields: dict[str, object] = {
            "group_id": "group",
            "member_id": "m",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": ["orders"],
            "owned": {},
        }
        fields.update(kwargs)
        return h.send(ConsumerHeartbeatInput(**fields)).error_code  # type: ignore[arg-type]

    assert code(member_id="") == ErrorCode.INVALID_REQUEST  # v1: the client makes the id
    assert code(rebalance_timeout_ms=-1) == ErrorCode.INVALID_REQUEST
    assert code(owned=None) == ErrorCode.INVALID_REQUEST
    assert code(subscribed_topic_names=None) == ErrorCode.INVALID_REQUEST
    assert code(member_epoch=-3) == ErrorCode.INVALID_REQUEST
    assert code(member_epoch=-2) == ErrorCode.INVALID_REQUEST  # static leave needs an instance
    assert code(instance_id="") == ErrorCode.INVALID_REQUEST
    assert code(server_assignor="sticky") == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert code(group_id="") == ErrorCode.INVALID_REQUEST
    assert not h.co.groups


def test_version_zero_gets_a_member_id_from_the_coordinator() -> None:
    h = ConsumerHarness()
    req = ConsumerHeartbeatInput(
        "group", "", 0, rebalance_timeout_ms=30000, subscribed_topic_names=["orders"], owned={}
    )
    r = h.send(ConsumerHeartbeatInput(**{**_fields(req), "api_version": 0}))
    assert r.error_code == 0 and r.member_id and len(r.member_id) == 22


def _fields(req: ConsumerHeartbeatInput) -> dict[str, object]:
    return {name: getattr(req, name) for name in req.__slots__}  # type: ignore[attr-defined]


def test_the_range_assignor_is_honoured() -> None:
    h = ConsumerHarness(topics={"orders": 4})
    a, b = h.member("a", assignor="range"), h.member("b", assignor="range")
    a.join()
    b.join()
    settle([a, b])
    assert sorted(a.partitions()) == [("orders", 0), ("orders", 1)]
    assert sorted(b.partitions()) == [("orders", 2), ("orders", 3)]


def test_a_member_whose_session_expires_is_removed_and_its_partitions_move() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    settle([a, b])
    for _ in range(9):  # b heartbeats every 5 s, a is silent
        h.advance(5000)
        b.beat()
    assert "a" not in h.co.consumer_group("group").members
    removed = [e for e in h.events if isinstance(e, MemberRemoved)]
    assert [(e.member_id, e.cause) for e in removed] == [("a", RemovalCause.SESSION_TIMEOUT)]
    assert b.partitions() == ALL and b.epoch == 3


def test_a_member_that_does_not_revoke_in_time_is_removed() -> None:
    h = ConsumerHarness()
    a = h.member("a", rebalance_timeout_ms=10000)
    b = h.member("b")
    a.join()
    b.join()
    r = h.send(ConsumerHeartbeatInput("group", "a", 1))  # told to revoke; never reports back
    assert r.error_code == 0
    h.advance(10000)
    assert "a" not in h.co.consumer_group("group").members
    removed = [e for e in h.events if isinstance(e, MemberRemoved)]
    assert removed[0].cause is RemovalCause.REBALANCE_TIMEOUT
    b.beat()
    assert b.partitions() == ALL


def test_leaving_frees_the_partitions_at_once() -> None:
    h = ConsumerHarness()
    a, b, c = h.member("a"), h.member("b"), h.member("c")
    for m in (a, b, c):
        m.join()
    settle([a, b, c])
    r = c.leave()
    assert (r.error_code, r.member_epoch) == (0, -1)
    a.beat()
    b.beat()
    assert a.partitions() | b.partitions() == ALL and owners_disjoint([a, b])


def test_a_static_member_comes_back_to_its_assignment() -> None:
    h = ConsumerHarness()
    a = h.member("a1", instance_id="i-a")
    b = h.member("b")
    a.join()
    b.join()
    settle([a, b])
    kept = a.partitions()
    assert a.leave(epoch=-2).member_epoch == -2
    back = h.member("a2", instance_id="i-a")
    r = back.join()
    assert r.error_code == 0 and back.partitions() == kept
    intruder = h.member("a3", instance_id="i-a")
    assert intruder.join().error_code == ErrorCode.UNRELEASED_INSTANCE_ID


def test_new_partitions_are_assigned_on_the_next_heartbeat() -> None:
    h = ConsumerHarness(topics={"orders": 2})
    a = h.member("a")
    a.join()
    h.topics["orders"] = 4
    r = a.beat()
    assert r.member_epoch == 2 and len(a.partitions()) == 4


def test_members_never_share_a_partition_under_random_churn() -> None:
    rng = random.Random(848)
    h = ConsumerHarness(topics={"orders": 7, "payments": 3})
    live: list[Member] = []
    made = 0
    for _ in range(300):
        action = rng.random()
        if action < 0.15 or not live:
            made += 1
            m = h.member(f"m{made}", topics=rng.choice([["orders"], ["orders", "payments"]]))
            m.join()
            live.append(m)
        elif action < 0.22 and len(live) > 1:
            live.pop(rng.randrange(len(live))).leave()
        else:
            rng.choice(live).beat()
        assert owners_disjoint(live)
    settle(live, rounds=6)
    owned = set().union(*(m.partitions() for m in live))
    subscribed_payments = any("payments" in m.topics for m in live)
    expected = {("orders", p) for p in range(7)} | (
        {("payments", p) for p in range(3)} if subscribed_payments else set()
    )
    assert owned == expected
    assert h.co.consumer_group("group").state.value == "Stable"


def test_a_regex_subscription_follows_new_topics() -> None:
    h = ConsumerHarness(topics={"orders-eu": 2, "payments": 1})
    a = h.member("a", topics=["payments"])
    a.regex = "orders-.*"
    r = a.join()
    assert r.member_epoch == 1
    assert a.partitions() == {("orders-eu", 0), ("orders-eu", 1), ("payments", 0)}
    assert a.beat().member_epoch == 1  # nothing new
    h.topics["orders-us"] = 1  # created (CreateTopics, --topic, auto-creation)
    assert a.beat().member_epoch == 2
    assert ("orders-us", 0) in a.partitions()
    [d] = h.co.consumer_group_describe(["group"])
    assert d.members[0].subscribed_topic_regex == "orders-.*"


def test_an_empty_regex_clears_the_members_regex() -> None:
    h = ConsumerHarness(topics={"orders-eu": 2, "payments": 1})
    a = h.member("a", topics=["payments"])
    a.regex = "orders-.*"
    a.join()
    r = h.send(ConsumerHeartbeatInput("group", "a", 1, subscribed_topic_regex="", owned=a.owned))
    assert r.member_epoch == 1  # told to revoke orders-eu first
    a.owned = dict(r.assignment or {})
    assert a.beat().member_epoch == 2
    assert a.partitions() == {("payments", 0)}


def test_an_invalid_regex_is_refused_with_re2s_reason() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.regex = "(a)\\1"  # backreferences: not RE2 (nor RE2/J, which Kafka uses)
    r = a.join()
    assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert r.error_message == (
        "SubscribedTopicRegex `(a)\\1` is not a valid regular expression:"
        " invalid escape sequence: \\1."
    )


def test_target_assignments_and_reconciliations_are_reported_with_their_time() -> None:
    h = ConsumerHarness()
    a, b = h.member("a"), h.member("b")
    a.join()
    b.join()
    computed = [e for e in h.events if isinstance(e, TargetAssignmentComputed)]
    assert [(e.group_epoch, e.members, e.members_changed) for e in computed] == [
        (1, 1, 1),
        (2, 2, 2),  # b's target is new, and a's shrank
    ]
    assert computed[-1].assignor == "uniform"
    h.advance(250)
    a.beat()  # a revokes
    h.advance(100)
    a.beat()  # ...and reports it: a is reconciled at epoch 2
    h.advance(50)
    b.beat()  # b takes what a freed
    reconciled = [
        (e.member_id, e.member_epoch, e.duration_ms)
        for e in h.events
        if isinstance(e, MemberReconciled) and e.member_epoch == 2
    ]
    assert reconciled == [("a", 2, 350), ("b", 2, 400)]
