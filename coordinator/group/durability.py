"""Nothing is visible before it is durable (issue 22).

The state machine changes a group at once, but what it tells clients must be stored first.
The driver writes each call's records and reports back with ``written(records, ok)``, in
write order. Each group's ``Ledger`` (ledger.py) keeps what the store holds of it (every
record replayed once stored, as a load replays them), its records still in flight and the
answers waiting for them. One rule for every kind of group:

- Answers that show a generation, leader, epoch or assignment (JoinGroup, SyncGroup,
  ConsumerGroupHeartbeat) are held while the group has a record in flight, and released
  when it is stored. A repeated JoinGroup answered from memory therefore waits for the
  generation it names, and a heartbeat for the target assignment it was computed with.
- A commit is *pending* until stored: OffsetFetch reads only stored offsets (a fetch with
  ``require_stable`` is told UNSTABLE_OFFSET_COMMIT for a partition with one pending).
- A failed write rolls the group back to what is stored (``revert``), as Kafka reverts a
  coordinator to its last committed offset when an append fails: parked and held
  requests are answered NOT_COORDINATOR (clients rediscover and rejoin), timers are
  re-armed from the restored members, and a group that was never stored is forgotten.
- A record that lands after its group was rolled back is what the store now holds; the
  group's current state is written after it, so a restart loads what memory has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import assert_never

from protocol.errors import ErrorCode

from . import events
from .classic.group import ClassicGroup
from .consumer import durability as consumer_durability
from .consumer import heartbeat as consumer_heartbeat
from .consumer.group import ConsumerGroup
from .consumer.requests import ConsumerHeartbeatResult
from .context import Context
from .deadlines import heartbeat_key, join_key, sync_key
from .ledger import Held, HeldResult, Ledger
from .lifecycle import restore
from .records import (
    CONSUMER_RECORDS,
    GroupDeletedRecord,
    GroupMetadataRecord,
    OffsetCommitRecord,
    Record,
    StoredGroup,
)
from .results import JoinGroupResult, LeaveGroupResult, OffsetFetchResult, SyncGroupResult

#: What a request waiting for a failed write is told: Kafka maps a failed append
#: (KAFKA_STORAGE_ERROR) to NOT_COORDINATOR, which clients retry after rediscovery.
WRITE_FAILED = ErrorCode.NOT_COORDINATOR


def settle_call(ctx: Context) -> None:
    """At the end of a call: hold the answers given with ``Context.reply_when_stored``
    while their group has records in flight, and give the others."""
    ledgers = ctx.shard.ledgers
    batch: dict[str, Held] = {}
    for group_id, token, result in ctx.after_call or ():
        held = batch.get(group_id)
        if held is None:
            ledger = ledgers.get(group_id)
            if ledger is None or not ledger.in_flight:
                ctx.reply(token, result)
                continue
            held = batch[group_id] = Held([], ledger.in_flight[-1])
            ledger.held.append(held)
        held.replies.append((token, result))
    ctx.after_call = None


def failed(result: HeldResult) -> HeldResult:
    """The same answer, as an error: the write it waited for was not stored."""
    match result:
        case JoinGroupResult():
            return JoinGroupResult(WRITE_FAILED, member_id=result.member_id)
        case SyncGroupResult():
            return SyncGroupResult(WRITE_FAILED)
        case OffsetFetchResult():
            return replace(result, error_code=WRITE_FAILED, topics=[])
        case ConsumerHeartbeatResult():
            return ConsumerHeartbeatResult(WRITE_FAILED)
        case LeaveGroupResult():
            return LeaveGroupResult(WRITE_FAILED)
        case _:
            assert_never(result)


def written(ctx: Context, records: Iterable[Record], ok: bool) -> None:
    """The driver stored ``records`` (``ok``) or failed to; called in write order."""
    shard = ctx.shard
    committed: dict[str, int] = {}
    for record in records:
        group_id = record.group_id
        if isinstance(record, OffsetCommitRecord):
            shard.offsets.stored(record, ok)  # the offsets manager keeps what is in flight
            if ok:  # told only once stored: a failed write journals nothing
                committed[group_id] = committed.get(group_id, 0) + 1
            continue
        ledger = shard.ledgers.get(group_id)
        if ledger is None:
            continue  # unloaded (another node's now): its late results change nothing
        current = _landed(ledger, record)
        if ok:
            record.replay(ledger.stored, None)
        if isinstance(record, GroupDeletedRecord):
            _deletion_written(ctx, ledger, record, ok)
        elif current and not ok:
            revert(ctx, group_id)
        elif ok and not current:
            _overwrite(ctx, ledger, record)
        if current:
            _release(ctx, ledger, record, ok)
        if ledger.idle() and shard.ledgers.get(group_id) is ledger:
            del shard.ledgers[group_id]
    for group_id, count in committed.items():
        ctx.event(events.OffsetsCommitted(group_id, count))


def _landed(ledger: Ledger, record: Record) -> bool:
    """Whether ``record`` was its group's oldest record in flight (it leaves the queue);
    False for one written after its group was rolled back, or never held for."""
    in_flight = ledger.in_flight
    if not in_flight or in_flight[0] is not record:
        return False
    in_flight.popleft()
    return True


def _overwrite(ctx: Context, ledger: Ledger, record: Record) -> None:
    """``record`` was stored after its group was rolled back: the store holds it, memory
    does not, so what memory holds is written after it (a restart loads what memory has).
    A stale record of a group forgotten, or of another kind now, stays stored."""
    g = ctx.groups.get(record.group_id)
    if isinstance(record, GroupMetadataRecord):
        if isinstance(g, ClassicGroup) and not ledger.in_flight:
            ctx.persist(g)
    elif isinstance(record, CONSUMER_RECORDS) and isinstance(g, ConsumerGroup):
        consumer_durability.overwrite(ctx, g, record)


def _deletion_written(ctx: Context, ledger: Ledger, record: GroupDeletedRecord, ok: bool) -> None:
    deleting = ledger.deleting
    if deleting is None or deleting[0] is not record:
        return
    ledger.deleting = None
    if ok:
        return
    ctx.shard.offsets.restore(record.group_id, deleting[1])  # still stored: back as stored
    if record.group_id not in ctx.groups:
        revert(ctx, record.group_id)


def _release(ctx: Context, ledger: Ledger, record: Record, ok: bool) -> None:
    """Give (or, the write failed, fail) the replies that waited for ``record``."""
    held = ledger.held
    while held and held[0].waiting is record:
        for token, result in held.popleft().replies:
            ctx.reply(token, result if ok else failed(result))


def _fail_held(ctx: Context, ledger: Ledger) -> None:
    while ledger.held:
        for token, result in ledger.held.popleft().replies:
            ctx.reply(token, failed(result))


def fail_all_held(ctx: Context) -> None:
    """Unloading: nothing held will be released (answered NOT_COORDINATOR, as parked
    requests are)."""
    for ledger in ctx.shard.ledgers.values():
        _fail_held(ctx, ledger)


def revert(ctx: Context, group_id: str) -> None:
    """Roll the group back to what the store holds of it, whatever its kind (or forget
    it: nothing stored). Held answers are told NOT_COORDINATOR; what is still in flight
    is stale now."""
    ledger = ctx.shard.ledgers.get(group_id)
    stored = StoredGroup()
    if ledger is not None:
        _fail_held(ctx, ledger)
        ledger.in_flight.clear()
        stored = ledger.stored
    current = ctx.groups.pop(group_id, None)
    heartbeats: dict[str, int] = {}
    if isinstance(current, ClassicGroup):
        _unpark(ctx, current)
        heartbeats = {m.member_id: m.last_heartbeat_ms for m in current.members.values()}
    elif isinstance(current, ConsumerGroup):
        consumer_heartbeat.drop(ctx, current)
    if stored.consumer is not None:
        # Members get a whole session from now, as on a load.
        c = consumer_durability.restore(ctx, stored.consumer, stored.members.values())
        ctx.groups[group_id] = c
        ctx.event(events.GroupReverted(group_id, c.group_epoch, c.state.value, len(c.members)))
        return
    snapshot = stored.snapshot
    if snapshot is not None:
        # A session that ran out (what the failed write was about) is not re-armed in the
        # past: that would expire the member again at once and, while the store is down,
        # spin expire -> write fails -> revert. The member gets a whole session, as on a
        # load; its expiry is retried once that runs out.
        for mr in snapshot.members:
            last = max(mr.last_heartbeat_ms, heartbeats.get(mr.member_id, 0))
            if last + mr.session_timeout_ms <= ctx.now:
                heartbeats[mr.member_id] = ctx.now
    elif not ctx.shard.offsets.has_any(group_id):
        ctx.event(events.GroupReverted(group_id, None, None, 0))
        return
    g = ClassicGroup(group_id, state_timestamp_ms=ctx.now)
    ctx.groups[group_id] = g
    if snapshot is not None:
        restore(ctx, g, snapshot, heartbeats)
    ctx.event(events.GroupReverted(group_id, g.generation_id, g.state.value, len(g.members)))


def unload(ctx: Context, group_ids: Iterable[str]) -> None:
    """The groups are another node's now (their coordinator partition moved): parked and
    held requests are answered NOT_COORDINATOR, timers stop, and what is in flight for
    them is forgotten (their late write results change nothing here)."""
    shard = ctx.shard
    for group_id in group_ids:
        ledger = shard.ledgers.pop(group_id, None)
        if ledger is not None:
            _fail_held(ctx, ledger)
        shard.offsets.take(group_id)
        g = ctx.groups.pop(group_id, None)
        if g is None:
            continue
        if isinstance(g, ConsumerGroup):
            consumer_heartbeat.drop(ctx, g)
            ctx.event(events.GroupUnloaded(group_id, g.group_epoch, len(g.members)))
            continue
        if isinstance(g, ClassicGroup):
            _unpark(ctx, g)
            ctx.event(events.GroupUnloaded(group_id, g.generation_id, len(g.members)))


def _unpark(ctx: Context, g: ClassicGroup) -> None:
    """Answer the group's parked requests and stop its timers: it is being replaced."""
    for m in g.members.values():
        token = g.take_join(m)
        if token is not None:
            ctx.reply(token, JoinGroupResult(WRITE_FAILED, member_id=m.member_id))
        if m.sync_token is not None:
            ctx.reply(m.sync_token, SyncGroupResult(WRITE_FAILED))
            m.sync_token = None
        ctx.cancel(m.heartbeat_key)
    for member_id in g.pending_join_members:
        ctx.cancel(heartbeat_key(g.group_id, member_id))
    ctx.cancel(join_key(g.group_id))
    ctx.cancel(sync_key(g.group_id))
