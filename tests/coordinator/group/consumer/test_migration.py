"""Online migration between the protocols (KIP-848, group.consumer.migration.policy):
a classic group becomes a consumer group when a consumer-protocol member joins, its
classic members keep working inside it through JoinGroup/SyncGroup/Heartbeat, and it goes
back to classic when the last consumer-protocol member leaves. Members played as eager
classic clients (as kafka-python) and consumer-protocol clients, with a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.group import GroupConfig
from coordinator.group.classic.group import ClassicGroup
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.requests import ConsumerHeartbeatInput
from coordinator.group.events import GroupConverted
from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode

from .harness import GROUP, ConsumerHarness, Member

TOPIC = "orders"
ALL = {(TOPIC, p) for p in range(6)}


def _subscription() -> bytes:
    return encode_subscription(ConsumerProtocolSubscription(topics=[TOPIC]), 1)


def _assignment(partitions: list[int]) -> bytes:
    tp = TopicPartition(topic=TOPIC, partitions=partitions)
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=[tp]), 0)


@dataclass
class ClassicClient:
    """An eager classic consumer: it gives up everything before each JoinGroup."""

    h: ConsumerHarness
    member_id: str = ""
    generation: int = -1
    owned: set[tuple[str, int]] = field(default_factory=set)

    def join(self) -> int:
        self.owned = set()
        return self.h.join(
            self.member_id, protocols=[("range", _subscription())], version=3, session=10000
        )

    def joined(self, token: int) -> None:
        r = self.h.join_result(token)
        assert r.error_code == 0, r
        self.member_id, self.generation = r.member_id, r.generation_id

    def sync(self, assignments: list[tuple[str, bytes]] | None = None) -> int:
        token = self.h.sync(self.member_id, self.generation, None, assignments)
        r = self.h.sync_result(token)
        if r.error_code == 0:
            _, decoded = decode_assignment(r.assignment)
            self.owned = {
                (tp.topic, p) for tp in decoded.assigned_partitions for p in tp.partitions
            }
        return r.error_code

    def beat(self) -> int:
        return self.h.heartbeat(self.member_id, self.generation)

    def rejoin(self) -> None:
        self.joined(self.join())
        assert self.sync() == 0


def _classic_group(h: ConsumerHarness) -> tuple[ClassicClient, ClassicClient]:
    """Two eager classic clients, Stable with 3 partitions each."""
    a, b = ClassicClient(h), ClassicClient(h)
    _form(h, a, b)
    return a, b


def _form(h: ConsumerHarness, a: ClassicClient, b: ClassicClient) -> None:
    """Both join a classic generation; the leader gives each half."""
    ta, tb = a.join(), b.join()
    while h.result(ta) is None or h.result(tb) is None:
        h.advance(h.config.initial_rebalance_delay_ms)
    a.joined(ta)
    b.joined(tb)
    leader = h.join_result(ta).leader
    first, second = (a, b) if leader == a.member_id else (b, a)
    halves = [(first.member_id, _assignment([0, 1, 2])), (second.member_id, _assignment([3, 4, 5]))]
    assert first.sync(halves) == 0
    assert second.sync() == 0
    assert a.owned | b.owned == ALL


def _owned_once(classic: list[ClassicClient], consumer: list[Member]) -> bool:
    seen: list[tuple[str, int]] = []
    for c in classic:
        seen += c.owned
    for m in consumer:
        seen += m.partitions()
    return len(seen) == len(set(seen))


def _settle(classic: list[ClassicClient], consumer: list[Member], rounds: int = 8) -> None:
    """Every member acts as its client would, until nobody is told to rejoin: checking
    after every step that no partition is owned twice."""
    for _ in range(rounds):
        quiet = True
        for m in consumer:
            m.beat()
            assert _owned_once(classic, consumer)
        for c in classic:
            error = c.beat()
            if error == ErrorCode.REBALANCE_IN_PROGRESS:
                quiet = False
                c.rejoin()
            else:
                assert error == 0, error
            assert _owned_once(classic, consumer)
        if quiet:
            return


def test_a_consumer_protocol_member_upgrades_a_classic_group_and_nobody_loses_a_partition() -> None:
    h = ConsumerHarness()
    a, b = _classic_group(h)
    assert h.commit({(TOPIC, 0): 7}, member_id=a.member_id, generation=a.generation) == {
        (TOPIC, 0): 0
    }
    c = h.member("c", topics=[TOPIC])
    assert c.join().error_code == 0
    g = h.co.consumer_group(GROUP)
    assert isinstance(g, ConsumerGroup)
    assert {m.member_id: m.classic is not None for m in g.members.values()} == {
        a.member_id: True,
        b.member_id: True,
        "c": False,
    }
    converted = [e for e in h.events if isinstance(e, GroupConverted)]
    assert [(e.from_type, e.to_type, e.members) for e in converted] == [("classic", "consumer", 2)]
    # The classic members keep what they own until told to rejoin; c waits for it.
    assert a.owned | b.owned == ALL and not c.partitions()
    _settle([a, b], [c])
    assert a.owned | b.owned | c.partitions() == ALL
    assert len(a.owned) == len(b.owned) == len(c.partitions()) == 2
    # The offsets stay with the group.
    assert h.co.fetch_offsets(GROUP, None, h.now).topics[0].partitions[0].offset == 7


def test_the_group_goes_back_to_classic_when_its_last_consumer_protocol_member_leaves() -> None:
    h = ConsumerHarness()
    a, b = _classic_group(h)
    c = h.member("c", topics=[TOPIC])
    c.join()
    _settle([a, b], [c])
    c.leave()
    g = h.co.groups[GROUP]
    assert isinstance(g, ClassicGroup)
    assert g.state.value == "PreparingRebalance"  # its members rejoin it as a classic group
    assert [(e.from_type, e.to_type) for e in h.events if isinstance(e, GroupConverted)] == [
        ("classic", "consumer"),
        ("consumer", "classic"),
    ]
    assert a.beat() == ErrorCode.REBALANCE_IN_PROGRESS
    _form(h, a, b)
    assert g.state.value == "Stable"


def test_a_converted_group_with_classic_members_is_loaded_as_it_was() -> None:
    h = ConsumerHarness()
    a, b = _classic_group(h)
    c = h.member("c", topics=[TOPIC])
    c.join()
    _settle([a, b], [c])
    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(h.stored, again.now))
    g = again.co.consumer_group(GROUP)
    assert g is not None
    assert {m.member_id: m.classic is not None for m in g.members.values()} == {
        a.member_id: True,
        b.member_id: True,
        "c": False,
    }
    a.h = again
    assert a.beat() == 0  # at its epoch, with its session


def test_with_migration_disabled_the_protocols_do_not_mix() -> None:
    config = GroupConfig(
        consumer=ConsumerGroupConfig(migration_policy="disabled", assignment_interval_ms=0)
    )
    h = ConsumerHarness(config=config)
    _classic_group(h)
    refused = h.member("c", topics=[TOPIC]).join()
    assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.co.groups[GROUP], ClassicGroup)
    other = ConsumerHarness(config=config)
    other.member("c", topics=[TOPIC]).join()
    joiner = ClassicClient(other)
    r = other.join_result(joiner.join())
    assert r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_group_not_using_the_consumer_protocol_is_not_upgraded() -> None:
    h = ConsumerHarness()
    tokens = [h.join(protocol_type="connect", protocols=[("x", b"")]) for _ in range(2)]
    while any(h.result(t) is None for t in tokens):
        h.advance(h.config.initial_rebalance_delay_ms)
    assert all(h.join_result(t).error_code == 0 for t in tokens)
    r = h.member("c", topics=[TOPIC]).join()
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.co.groups[GROUP], ClassicGroup)


def test_upgrade_policy_alone_does_not_downgrade() -> None:
    config = GroupConfig(
        consumer=ConsumerGroupConfig(migration_policy="upgrade", assignment_interval_ms=0)
    )
    h = ConsumerHarness(config=config)
    a, b = _classic_group(h)
    c = h.member("c", topics=[TOPIC])
    c.join()
    _settle([a, b], [c])
    c.leave()
    assert isinstance(h.co.groups[GROUP], ConsumerGroup)
    _settle([a, b], [])
    assert a.owned | b.owned == ALL


def test_a_downgrade_whose_write_fails_rolls_back_to_the_consumer_group_stored() -> None:
    """What a failed write rolls back to is what a restart would load: the consumer group
    as stored, not the classic group it was converted from."""
    h = ConsumerHarness()
    a, b = _classic_group(h)
    c = h.member("c", topics=[TOPIC])
    c.join()
    _settle([a, b], [c])
    h.store_at_once = False
    h.send_held(ConsumerHeartbeatInput(group_id=GROUP, member_id="c", member_epoch=-1))
    assert isinstance(h.co.groups[GROUP], ClassicGroup)  # downgraded, not stored yet
    while h.writes:
        h.store(ok=False)
    g = h.co.groups[GROUP]
    again = ConsumerHarness(topics=dict(h.topics))
    again.apply(again.co.load(h.stored, again.now))
    loaded = again.co.consumer_group(GROUP)
    assert isinstance(g, ConsumerGroup) and loaded is not None
    assert sorted(g.members) == sorted(loaded.members) == sorted([a.member_id, b.member_id, "c"])
    assert (g.group_epoch, g.assignment_epoch) == (loaded.group_epoch, loaded.assignment_epoch)


def test_classic_members_are_told_to_rejoin_only_once_a_newer_target_exists() -> None:
    """KAFKA-20272 (4.3): while the target lags the group epoch (assignment interval), a
    classic member's heartbeat is answered as usual; REBALANCE_IN_PROGRESS comes with the
    newer target."""
    h = ConsumerHarness(keep_interval=True)
    a, b = _classic_group(h)

    def beat(m: Member, full: bool = False) -> None:
        token = h.send_held(m.request(full))
        h.advance(100)  # the group's assignment timer
        m.answered(h.replies[token])

    c = h.member("c", topics=[TOPIC])
    beat(c, full=True)
    for _ in range(8):
        beat(c)
        for x in (a, b):
            if x.beat() == ErrorCode.REBALANCE_IN_PROGRESS:
                x.rejoin()
    assert len(a.owned) == len(b.owned) == len(c.partitions()) == 2
    assert a.beat() == b.beat() == 0
    d = h.member("d", topics=[TOPIC])
    held = h.send_held(d.request(full=True))  # a new member: the group epoch moves on
    g = h.co.consumer_group(GROUP)
    assert g.group_epoch > g.assignment_epoch and held not in h.replies
    assert a.beat() == b.beat() == 0  # no newer target yet
    h.advance(100)
    d.answered(h.replies[held])
    assert ErrorCode.REBALANCE_IN_PROGRESS in (a.beat(), b.beat())


def test_a_classic_members_commit_from_before_its_rejoin_is_judged_per_partition() -> None:
    """KIP-1251 (Kafka 4.3) for a classic member of a consumer group: its commit at the
    generation it had before rejoining is taken for the partitions it kept; the others, and
    a generation ahead of its own, are ILLEGAL_GENERATION (the classic protocol's error)."""
    h = ConsumerHarness()
    a, b = _classic_group(h)
    before, held = a.generation, set(a.owned)
    c = h.member("c", topics=[TOPIC])
    c.join()
    _settle([a, b], [c])
    assert a.generation > before and a.owned < held
    offsets = dict.fromkeys(held, 9)
    answer = h.commit(offsets, member_id=a.member_id, generation=before, version=9)
    illegal = ErrorCode.ILLEGAL_GENERATION
    assert answer == {tp: 0 if tp in a.owned else illegal for tp in held}
    ahead = h.commit(offsets, member_id=a.member_id, generation=a.generation + 1, version=9)
    assert ahead == dict.fromkeys(held, illegal)
