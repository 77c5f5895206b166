"""KIP-1251 (Kafka 4.3) with a real client: a confluent-kafka consumer (KIP-848 protocol)
commits a partition it keeps with the member epoch it had before it gave another one up,
and the daemon, which has moved it to the next epoch already, takes the commit.

The order is made certain, not raced: a relay the daemon advertises (wire_tap.py) holds
back the heartbeat answer that moves the member to its next epoch until the client has
sent its commit behind it, so librdkafka commits with the epoch it still knows. Before
KIP-1251 the daemon answered that commit STALE_MEMBER_EPOCH (113).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from .conftest import Daemon, wait_until
from .kip848_member import ConsumerProtocolMember, fast_kip848_daemon
from .wire_tap import WireTap

pytestmark = pytest.mark.integration

TOPIC = "k1251"
ALL = frozenset((TOPIC, p) for p in range(2))


@pytest.fixture
def tap() -> Iterator[WireTap]:
    relay = WireTap()
    yield relay
    relay.close()


def test_a_commit_at_the_epoch_before_a_revocation_is_taken_for_a_kept_partition(
    start_daemon: Callable[..., Daemon], tap: WireTap
) -> None:
    daemon = start_daemon(
        *fast_kip848_daemon(f"{TOPIC}:2", 10_000, 100),
        "--advertised-listener",
        f"127.0.0.1:{tap.port}",
    )
    tap.target = ("127.0.0.1", daemon.port)
    via_tap = f"127.0.0.1:{tap.port}"
    first = ConsumerProtocolMember(via_tap, "g1251", TOPIC, client_id="first")
    second: ConsumerProtocolMember | None = None
    try:
        assert wait_until(lambda: first.assigned == ALL, 30), first.assigned
        assert wait_until(lambda: tap.epochs.get("first", 0) > 0, 10)
        tap.hold_next_epoch_above("first", tap.epochs["first"])
        # A second member makes the group take one partition from the first: the first
        # revokes it, acknowledges, and is moved to the next epoch (that answer is held).
        second = ConsumerProtocolMember(via_tap, "g1251", TOPIC, client_id="second")
        assert tap.holding.wait(30), "the first member never reached a new epoch"
        assert tap.held_epochs is not None
        old_epoch, new_epoch = tap.held_epochs
        assert 0 < old_epoch < new_epoch
        given_up = set(first.revoked)
        kept = ALL - given_up
        assert len(given_up) == 1 and len(kept) == 1, (given_up, kept)
        [partition] = kept
        raised: Exception | None = None
        try:
            first.commit({partition: 7})
        except Exception as refused:  # the wire below says what it was
            raised = refused
        [commit] = [c for c in tap.commits if (c.partitions[0][0], c.partitions[0][1]) == partition]
        assert commit.member_epoch == old_epoch  # the epoch the client still knew
        assert commit.errors == {partition: 0}  # taken: the partition was kept (KIP-1251)
        assert raised is None, raised
        assert wait_until(lambda: second is not None and second.assigned == given_up, 30)
        assert first.committed(partition) == 7
        assert not first.errors, first.errors
    finally:
        for member in (first, second):
            if member is not None:
                member.close()
