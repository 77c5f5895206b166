"""When the console calls a member's heartbeats late: a member that stopped heartbeating
is highlighted well before its session runs out and the coordinator removes it.

- A KIP-848 member is late once twice the heartbeat interval the coordinator gives it
  (``group.consumer.heartbeat.interval.ms``, 5 s by default) passed without a heartbeat:
  it has missed at least one.
- A classic member does not tell the coordinator its heartbeat interval. Kafka's clients
  heartbeat at a third of the session timeout or more often (``heartbeat.interval.ms``:
  3 s of 45 s for Java and librdkafka, 3 s of 10 s for kafka-python), so a member silent
  for a third of its session has missed at least one. Only in a Stable group: during a
  rebalance a member waits in JoinGroup or SyncGroup instead of heartbeating.
"""

from __future__ import annotations

#: A classic member is late after this fraction of its session timeout.
CLASSIC_SESSION_FRACTION = 3
#: A KIP-848 member is late after this many heartbeat intervals.
CONSUMER_INTERVALS = 2


def classic_late_after_ms(session_timeout_ms: int) -> int:
    return session_timeout_ms // CLASSIC_SESSION_FRACTION


def consumer_late_after_ms(heartbeat_interval_ms: int) -> int:
    return heartbeat_interval_ms * CONSUMER_INTERVALS


def is_late(since_heartbeat_ms: int | None, late_after_ms: int | None) -> bool:
    return (
        since_heartbeat_ms is not None
        and late_after_ms is not None
        and (since_heartbeat_ms > late_after_ms)
    )


def late_after_ms(
    heartbeat_interval_ms: int | None, session_timeout_ms: int, group_state: str
) -> int | None:
    """When a member is late: by the interval the coordinator gives it (KIP-848), else by its
    session, and then only in a Stable group (mid-rebalance, members wait in JoinGroup or
    SyncGroup instead of heartbeating). None: never late now."""
    if heartbeat_interval_ms is not None:
        return consumer_late_after_ms(heartbeat_interval_ms)
    return classic_late_after_ms(session_timeout_ms) if group_state == "Stable" else None
