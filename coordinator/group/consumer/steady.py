"""A reconciled member's ConsumerGroupHeartbeat that changes nothing: the consumer
heartbeat lane's one call (``handlers/consumer_heartbeat_lane.py``).

Most KIP-848 heartbeats are of a member at its group's current target, sending its
group, member id and epoch and nothing else (clients leave out what did not change). For
such a heartbeat ``heartbeat.py`` validates, finds the member, checks its epoch, changes
nothing, restarts its session and answers its epoch and the heartbeat interval, with no
assignment and no record. ``beat`` says whether a heartbeat is that one, by the same
tests that path would make, and if so does the only thing it would do: move the session
deadline (in place, as a classic heartbeat does). Anything else, it declines (None) and
the general path takes the heartbeat: whatever could change the member or the group, or
is answered only once the group's records are stored (the durability rule: an answer
waits while the group has records in flight), or would answer differently. A group with
configs of its own is left to the general path too: ``group_configs`` alone says what they
come to.

The compiled heartbeat lane (``coordinator/fastlane/_heartbeats.c``, ``consumer_beat``)
makes these same tests on the same objects, in C, before the frame ever reaches Python: a
test added here must be added there too (or make the walker decline), or the two paths
answer differently (``tests/coordinator/fastlane/test_consumer_heartbeat_batch.py``
compares them).
"""

from __future__ import annotations

from ..context import Shard
from ..deadlines import TimerKind, consumer_session_key
from . import regex
from .group import ConsumerGroup
from .heartbeat import _blank

#: (member epoch, heartbeat interval, the session timer key to (re)arm or None, deadline).
Steady = tuple[int, int, str | None, int]


def beat(
    shard: Shard,
    group_id: str,
    member_id: str,
    member_epoch: int,
    instance_id: str | None,
    client_id: str,
    client_host: str,
    now: int,
) -> Steady | None:
    """The steady heartbeat's answer and session move; None: the general path's to take.
    The caller has seen that the request carries nothing but these fields (no rack,
    rebalance timeout, subscription, assignor or owned partitions)."""
    g = shard.groups.get(group_id)
    if type(g) is not ConsumerGroup or member_epoch <= 0:
        return None
    if g.changed or g.group_epoch > g.assignment_epoch:  # (coalesce.stale: held)
        return None
    m = g.members.get(member_id) if instance_id is None else g.static_member(instance_id)
    if (
        m is None
        or m.member_id != member_id
        or m.member_epoch != member_epoch
        or m.classic is not None
        or not m.is_reconciled_to(g.assignment_epoch)
        or m.client_id != client_id  # a change of either is written to its record
        or m.client_host != client_host
    ):
        return None
    # A member (not a classic one) was validated when it joined, so its id and its group's
    # are not blank; an instance id sent now is checked as validation would.
    if instance_id is not None and _blank(instance_id):
        return None
    ledger = shard.ledgers.get(group_id)
    if ledger is not None and ledger.in_flight:
        return None  # the answer would wait for the group's records
    if g.resolved and regex.to_resolve(
        g, None, shard.topic_count(), shard.config.consumer, now
    ):  # the group's regexes are due a refresh (off the loop)
        return None
    if not partitions_unchanged(shard, g):
        return None  # the group epoch is bumped
    if shard.group_configs.get(group_id):
        return None  # its own configs: the general path applies them (group_configs.py)
    consumer = shard.config.consumer  # the daemon's, as ``group_configs.effective`` gives
    timeout, interval = consumer.session_timeout_ms, consumer.heartbeat_interval_ms
    key = _session_key(group_id, member_id)
    deadline = now + timeout
    moved = shard.deadlines.move_heartbeat(
        key, group_id, member_id, deadline, TimerKind.CONSUMER_SESSION
    )
    return member_epoch, interval, key if moved else None, deadline


#: Session timer keys made (escaping both ids costs more than the rest of a heartbeat's
#: bookkeeping); a full cache is simply cleared.
_KEYS: dict[tuple[str, str], str] = {}
_KEYS_HELD = 65_536


def _session_key(group_id: str, member_id: str) -> str:
    key = _KEYS.get((group_id, member_id))
    if key is None:
        if len(_KEYS) >= _KEYS_HELD:
            _KEYS.clear()
        key = _KEYS[(group_id, member_id)] = consumer_session_key(group_id, member_id)
    return key


def partitions_unchanged(shard: Shard, g: ConsumerGroup) -> bool:
    """Whether the subscribed topics' partition counts are those the group last saw
    (``heartbeat.subscription_metadata(...) == g.subscription_metadata``, without
    building the dict)."""
    known = g.subscription_metadata
    seen = 0
    for topic, subscribers in g.topic_subscribers.items():
        if subscribers > 0:
            partitions = shard.topic_partitions(topic)
            if partitions > 0:
                if known.get(topic) != partitions:
                    return False
                seen += 1
    return seen == len(known)
