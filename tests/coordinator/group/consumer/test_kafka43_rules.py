"""Rules Kafka 4.2-4.4 changed for consumer groups (issue 41), one test each."""

from __future__ import annotations

from coordinator.group.consumer.member import MemberState

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
