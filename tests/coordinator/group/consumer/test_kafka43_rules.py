"""Rules Kafka 4.2-4.4 changed for consumer groups (issue 41), one test each."""

from __future__ import annotations

from coordinator.group import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.group.consumer.member import MemberState
from protocol.errors import ErrorCode

from .harness import ConsumerHarness


def test_a_member_still_revoking_after_a_revocation_keeps_its_epoch() -> None:
    """KAFKA-19974 (4.2): leaving UNREVOKED_PARTITIONS for UNREVOKED_PARTITIONS (the target
    moved on while the member revoked) does not bump its epoch."""
    h = ConsumerHarness()
    a, b, c = h.member("a"), h.member("b"), h.member("c")
    a.join()
    b.join()
    a.beat()  # told to revoke three partitions: UNREVOKED_PARTITIONS at epoch 1
    g = h.co.consumer_group("group")
    assert (g.members["a"].state, a.epoch) == (MemberState.UNREVOKED_PARTITIONS, 1)
    c.join()  # a new target (epoch 3) before a reports the revocation
    a.beat()  # revoked the three, and must give up more for epoch 3
    assert g.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert a.epoch == g.members["a"].member_epoch == 1
    a.beat()  # revoked those too: straight to the target's epoch
    assert a.epoch == 3 and g.members["a"].state is not MemberState.UNREVOKED_PARTITIONS


def test_a_regex_subscription_becoming_empty_bumps_the_group_epoch() -> None:
    """KAFKA-19891 (4.2): a member whose pattern goes from one to none changes the group."""
    h = ConsumerHarness()
    a = h.member("a", topics=[], regex="ord.*")
    a.join()
    g = h.co.consumer_group("group")
    before = g.group_epoch
    assert a.partitions()  # the pattern matched orders
    a.regex = ""  # librdkafka's "no pattern"
    a.beat(full=True)
    assert g.group_epoch == before + 1
    a.beat()
    assert not a.partitions()  # subscribed to nothing: its partitions are given back


def test_a_static_member_rejoins_a_full_group() -> None:
    """KAFKA-20601 (4.4): a static member coming back takes its own place; a new member is
    still refused."""
    consumer = ConsumerGroupConfig(max_size=2, assignment_interval_ms=0)
    h = ConsumerHarness(config=GroupConfig(consumer=consumer))
    a, b = h.member("a", instance_id="i-a"), h.member("b")
    a.join()
    b.join()
    a.leave(epoch=-2)  # away for a while: its place is kept
    back = h.member("a2", instance_id="i-a")
    assert back.join().error_code == 0
    assert h.member("c").join().error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_a_classic_join_with_a_malformed_subscription_is_an_inconsistent_protocol() -> None:
    """KAFKA-20662 (4.4): during migration, a JoinGroup whose embedded consumer protocol
    cannot be read is INCONSISTENT_GROUP_PROTOCOL (Kafka answered UNKNOWN_SERVER_ERROR)."""
    h = ConsumerHarness()
    h.member("a").join()
    token = h.join(protocols=[("range", b"\x00\x01\xff\xff\xff\xff")], version=5)
    assert h.join_result(token).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
