"""Handing groups over to the next coordinator while this one is alive (issue 31).

Kafka's coordinator gives every member a whole session when it loads a group, and a
rebalance in progress is lost with the old coordinator: after a crash nothing else is
possible (the old coordinator's timers died with it), and a load without a hand-over
still does that here. A node that gives a coordinator partition up while it is alive
(stopping, or the placement moving the partition) does better. In the transaction that
releases the partition it stores each of its groups as memory holds it (the snapshot
``take`` returns: members that joined since the last stored generation included, and the
state the group was in) and, beside it, what no snapshot holds (``GroupHandover``): what was
left of each member's session, and the member ids handed out (KIP-394) but not joined yet.

The next owner loads that snapshot (``lifecycle.load``) and, with the hand-over:

- gives each member what was left of its session, less the time the hand-over took (on the
  database's clock: the nodes' clocks need not agree), at most a whole session; a member
  that was waiting for its JoinGroup or SyncGroup answer (alive, and now looking for the
  new coordinator: that answer was NOT_COORDINATOR) gets a whole session;
- knows the pending member ids, so their JoinGroup is not refused UNKNOWN_MEMBER_ID (not
  an id whose MEMBER_ID_REQUIRED answer still waits for a write, which the release fails:
  the JoinGroup that created the group; its client never learnt the id, and a join phase
  waits for every pending id, so the next owner would wait for it until it ran out);
- restarts a rebalance that was in progress (its members rejoin with their ids), which an
  absent member now delays only for what was left of its session, not a whole session
  after every move.

A KIP-848 consumer group's records are stored as it changes: its hand-over carries only
what was left of each member's session, given back if the group's epoch and members are
the stored ones. A hand-over that is not the stored snapshot's (another generation or
other members: a later snapshot replaced it) is ignored. One older than ``max_age_ms``
(nobody took the partition at once: its members could reach no coordinator meanwhile)
gives whole sessions, as Kafka does, and keeps only the pending ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .classic.group import ClassicGroup
from .classic.states import DEAD
from .consumer.group import ConsumerGroup
from .context import Context, Shard, snapshot
from .deadlines import TimerKind, consumer_session_key, heartbeat_key
from .frozen import frozen
from .records import GroupMetadataRecord

#: A member's session at the hand-over when it was waiting for a JoinGroup or SyncGroup
#: answer: the next owner gives it a whole session.
WAITING = -1


@frozen
class GroupHandover:
    """What the group's snapshot does not hold, written beside it at a hand-over."""

    group_id: str
    generation_id: int  # the snapshot's: a later snapshot makes the hand-over stale
    #: Member id -> ms left of its session at the hand-over (``WAITING``).
    sessions: dict[str, int]
    #: KIP-394 member ids handed out, not joined yet -> ms left before they are forgotten.
    pending: dict[str, int]
    #: How long before the load it was written (the store sets it, by the database's clock).
    age_ms: int = 0


def take(
    shard: Shard, belongs: Callable[[str], bool], now: int
) -> list[tuple[GroupMetadataRecord | None, GroupHandover]]:
    """The groups for which ``belongs(group_id)``, as memory holds them now: each classic
    group's snapshot and its hand-over; a consumer group's hand-over alone (its records
    are written as it changes). Changes nothing (``unload`` follows)."""
    taken: list[tuple[GroupMetadataRecord | None, GroupHandover]] = []
    deadlines = shard.deadlines
    for group_id, g in shard.groups.items():
        if not belongs(group_id):
            continue
        if isinstance(g, ConsumerGroup):
            left = {
                member_id: max(deadline - now, 0)
                for member_id in g.members
                if (deadline := deadlines.deadline(consumer_session_key(group_id, member_id)))
                is not None
            }
            taken.append((None, GroupHandover(group_id, g.group_epoch, left, {})))
            continue
        if not isinstance(g, ClassicGroup):
            continue  # (there is no third kind)
        ledger = shard.ledgers.get(group_id)
        snapshotted = ledger is not None and (
            ledger.stored.snapshot is not None or bool(ledger.in_flight)
        )
        if g.state is DEAD or not (g.members or g.pending_join_members or snapshotted):
            continue  # deleted, or known by its offsets only: no snapshot to write
        record = snapshot(g)
        # A member that joined with no id and whose JoinGroup is still parked: the release
        # answers it NOT_COORDINATOR, so its client never learns the id and rejoins as a
        # new member. Handed over, it would hold the next owner's join phase for a whole
        # rebalance timeout; a crash (no hand-over) forgets it, as Kafka does.
        untold = {
            m.member_id
            for m in g.members.values()
            if m.id_untold and m.is_new and m.join_token is not None
        }
        if untold:
            leader = None if record.leader_id in untold else record.leader_id
            kept = [mr for mr in record.members if mr.member_id not in untold]
            record = replace(record, leader_id=leader, members=kept)
        sessions: dict[str, int] = {}
        for m in g.members.values():
            if m.member_id in untold:
                continue
            deadline = deadlines.deadline(m.heartbeat_key)
            parked = m.join_token is not None or m.sync_token is not None
            sessions[m.member_id] = (
                WAITING if parked or deadline is None else max(deadline - now, 0)
            )
        pending: dict[str, int] = {}
        in_flight = () if ledger is None else ledger.in_flight
        for member_id in g.pending_join_members:
            waits = g.unannounced.get(member_id)
            if waits is not None and any(r is waits for r in in_flight):
                # Its answer waits for a write the release fails: the client never learns
                # the id, and the next owner's join phase would wait for it in vain.
                continue
            deadline = deadlines.deadline(heartbeat_key(group_id, member_id))
            if deadline is not None and deadline > now:
                pending[member_id] = deadline - now
        taken.append((record, GroupHandover(group_id, g.generation_id, sessions, pending)))
    return taken


def last_heartbeats(
    handover: GroupHandover, stored: GroupMetadataRecord, now: int, max_age_ms: int
) -> dict[str, int] | None:
    """Member id -> the last heartbeat to restore it with (its session runs out a session
    timeout after it); None if the hand-over is not the stored snapshot's."""
    if handover.generation_id != stored.generation_id or set(handover.sessions) != {
        m.member_id for m in stored.members
    }:
        return None
    age = max(handover.age_ms, 0)
    whole = age > max_age_ms
    lasts: dict[str, int] = {}
    for mr in stored.members:
        left = handover.sessions[mr.member_id]
        if whole or left == WAITING:
            lasts[mr.member_id] = now
        else:
            left = min(max(left - age, 0), mr.session_timeout_ms)
            lasts[mr.member_id] = now + left - mr.session_timeout_ms
    return lasts


def restore_pending(
    ctx: Context, g: ClassicGroup, handover: GroupHandover, max_age_ms: int
) -> None:
    """The member ids handed out at the previous owner: known here until what was left of
    their time runs out (a JoinGroup with one is a new member's, not UNKNOWN_MEMBER_ID)."""
    age = max(handover.age_ms, 0)
    for member_id, left in handover.pending.items():
        if age <= max_age_ms:
            left -= age
        if left <= 0 or member_id in g.members or member_id in g.pending_join_members:
            continue
        g.add_pending_member(member_id)
        deadline = ctx.now + min(left, ctx.config.max_session_timeout_ms)
        key = heartbeat_key(g.group_id, member_id)
        ctx.deadlines.schedule_heartbeat(ctx.out, key, g.group_id, member_id, deadline)


def restore_consumer_sessions(
    ctx: Context, g: ConsumerGroup, handover: GroupHandover, max_age_ms: int
) -> None:
    """A consumer group just restored with whole sessions: each member gets what was left
    of its session instead, if the hand-over is of these members at this group epoch."""
    age = max(handover.age_ms, 0)
    if (
        age > max_age_ms
        or handover.generation_id != g.group_epoch
        or set(handover.sessions) != set(g.members)
    ):
        return
    for member_id, left in handover.sessions.items():
        key = consumer_session_key(g.group_id, member_id)
        whole = ctx.deadlines.deadline(key)
        if whole is None:
            continue
        deadline = ctx.now + min(max(left - age, 0), whole - ctx.now)
        kind = TimerKind.CONSUMER_SESSION
        ctx.deadlines.schedule_heartbeat(ctx.out, key, g.group_id, member_id, deadline, kind)
