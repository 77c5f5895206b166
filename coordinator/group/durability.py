"""Nothing is visible before it is durable (issue 22).

The state machine changes a group at once, but what it tells clients must be stored first.
The driver writes each call's records and reports back with ``written(records, ok)``, in
write order. Here:

- Each classic group's last *durable* snapshot is kept, each consumer group's stored
  records, and every group's records still in flight. One rule for both kinds:
- Answers that show a generation, leader, epoch or assignment (JoinGroup, SyncGroup,
  ConsumerGroupHeartbeat) are held while the group has a record in flight, and released
  when it is stored. A repeated JoinGroup answered from memory therefore waits for the
  generation it names, and a heartbeat for the target assignment it was computed with.
- A commit is *pending* until stored: OffsetFetch reads only stored offsets (a fetch with
  ``require_stable`` is told UNSTABLE_OFFSET_COMMIT for a partition with one pending).
- A failed write rolls the group back to what is stored, as Kafka
  reverts a coordinator to its last committed offset when an append fails: parked and
  held requests are answered NOT_COORDINATOR (clients rediscover and rejoin), timers are
  re-armed from the restored members, and a group that was never stored is forgotten.
- A record that lands after its group was rolled back is what the store now holds; the
  group's current state is written after it, so a restart loads what memory has.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import assert_never

from protocol.errors import ErrorCode

from . import events
from .consumer import durability as consumer_durability
from .consumer import heartbeat as consumer_heartbeat
from .consumer.group import ConsumerGroup
from .consumer.requests import ConsumerHeartbeatResult
from .context import Context
from .deadlines import heartbeat_key, join_key, sync_key
from .group import ClassicGroup
from .lifecycle import restore
from .records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    GroupConfigRecord,
    GroupDeletedRecord,
    GroupMetadataRecord,
    HeartbeatRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
    Record,
)
from .results import JoinGroupResult, LeaveGroupResult, OffsetFetchResult, SyncGroupResult

#: What a request waiting for a failed write is told: Kafka maps a failed append
#: (KAFKA_STORAGE_ERROR) to NOT_COORDINATOR, which clients retry after rediscovery.
WRITE_FAILED = ErrorCode.NOT_COORDINATOR

HeldResult = (
    JoinGroupResult
    | SyncGroupResult
    | OffsetFetchResult
    | ConsumerHeartbeatResult
    | LeaveGroupResult
)


@dataclass(slots=True, eq=False)
class Held:
    """The replies one call gave about one group, waiting for the group's last record in
    flight when they were given (by identity): writes complete in order, so once it is
    stored every earlier one is, and a failed one rolls the group back, failing them
    all. One per call and group, not per reply (a join phase answers every member)."""

    replies: list[tuple[object, HeldResult]]
    waiting: Record


def settle_call(ctx: Context) -> None:
    """At the end of a call: hold the answers given with ``Context.reply_when_stored``
    while their group has records in flight, and give the others."""
    shard = ctx.shard
    batch: dict[str, Held] = {}
    for group_id, token, result in ctx.after_call or ():
        held = batch.get(group_id)
        if held is None:
            in_flight = shard.unstored.get(group_id)
            if not in_flight:
                ctx.reply(token, result)
                continue
            held = batch[group_id] = Held([], in_flight[-1])
            queue = shard.held.get(group_id)
            if queue is None:
                queue = shard.held[group_id] = deque()
            queue.append(held)
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
    committed: dict[str, int] = {}
    for record in records:
        current = _landed(ctx, record)
        match record:
            case GroupMetadataRecord():
                _snapshot_written(ctx, record, ok, current)
            case OffsetCommitRecord():
                ctx.shard.offsets.stored(record, ok)
                if ok:  # told only once stored: a failed write journals nothing
                    committed[record.group_id] = committed.get(record.group_id, 0) + 1
            case GroupDeletedRecord():
                _deletion_written(ctx, record, ok)
            case OffsetDeleteRecord() | HeartbeatRecord():
                pass  # nothing is shown from them before they are stored
            case GroupConfigRecord():
                pass  # its answer waits for the write (the runtime holds it)
            case (
                ConsumerGroupRecord()
                | ConsumerMemberRecord()
                | ConsumerMemberRemovedRecord()
                | ConsumerGroupDeletedRecord()
            ):
                _consumer_written(ctx, record, ok, current)
            case _:
                assert_never(record)
        if current:
            _release(ctx, record, ok)
    for group_id, count in committed.items():
        ctx.event(events.OffsetsCommitted(group_id, count))


def _landed(ctx: Context, record: Record) -> bool:
    """Whether ``record`` was its group's oldest record in flight (it leaves the queue);
    False for one written after its group was rolled back or forgotten."""
    in_flight = ctx.shard.unstored.get(record.group_id)
    if not in_flight or in_flight[0] is not record:
        return False
    in_flight.popleft()
    if not in_flight:
        del ctx.shard.unstored[record.group_id]
    return True


def _snapshot_written(ctx: Context, record: GroupMetadataRecord, ok: bool, current: bool) -> None:
    shard = ctx.shard
    group_id = record.group_id
    if ok:
        if current:
            shard.durable[group_id] = record
        elif (g := ctx.classic(group_id)) is not None:
            # It was written after the group was rolled back: what the store holds now...
            shard.durable[group_id] = record
            if group_id not in shard.unstored:
                ctx.persist(g)  # ...is replaced by what memory holds.
        # Else the group was forgotten (rolled back to nothing, or unloaded: it is another
        # node's now); a stale snapshot of a group nobody was answered about stays stored.
    elif current and ctx.consumer(group_id) is None:  # (a consumer group now: moot)
        revert(ctx, group_id)


def _consumer_written(
    ctx: Context, record: consumer_durability.ConsumerRecord, ok: bool, current: bool
) -> None:
    """A consumer group's record: what is stored is remembered, a failed write rolls the
    group back to it, and a record that lands after a rollback is overwritten by what
    memory holds (as a classic snapshot is)."""
    group_id = record.group_id
    if ok and current:
        consumer_durability.stored(ctx.shard.consumer_durable, record)
    elif ok:
        consumer_durability.correct(ctx, record)
    elif current and ctx.classic(group_id) is None:  # (a classic group now: its own path)
        revert_consumer(ctx, group_id)


def _deletion_written(ctx: Context, record: GroupDeletedRecord, ok: bool) -> None:
    shard = ctx.shard
    entry = shard.deleting.get(record.group_id)
    if entry is None or entry[0] is not record:
        if ok:
            shard.durable.pop(record.group_id, None)
        return
    del shard.deleting[record.group_id]
    if ok:
        shard.durable.pop(record.group_id, None)
        return
    shard.offsets.restore(record.group_id, entry[1])  # still stored: back as stored
    if record.group_id not in ctx.groups:
        revert(ctx, record.group_id)


def _release(ctx: Context, record: Record, ok: bool) -> None:
    """Give (or, the write failed, fail) the replies that waited for ``record``."""
    group_id = record.group_id
    held = ctx.shard.held.get(group_id)
    while held and held[0].waiting is record:
        h = held.popleft()
        for token, result in h.replies:
            ctx.reply(token, result if ok else failed(result))
    if held is not None and not held:
        del ctx.shard.held[group_id]


def _fail(ctx: Context, held: Held) -> None:
    for token, result in held.replies:
        ctx.reply(token, failed(result))


def fail_held(ctx: Context, group_id: str) -> None:
    for h in ctx.shard.held.pop(group_id, ()):
        _fail(ctx, h)


def fail_all_held(ctx: Context) -> None:
    """Unloading: nothing held will be released (answered NOT_COORDINATOR, as parked
    requests are)."""
    for group_id in list(ctx.shard.held):
        fail_held(ctx, group_id)


def revert_consumer(ctx: Context, group_id: str) -> None:
    """Roll a consumer group back to its stored records (or, never stored, to what the
    id held before: a classic group's snapshot, offsets, or nothing). Held answers are
    told NOT_COORDINATOR; members get a whole session from now, as on a load."""
    shard = ctx.shard
    fail_held(ctx, group_id)
    shard.unstored.pop(group_id, None)  # what is still in flight is stale now
    current = ctx.consumer(group_id)
    if current is not None:
        consumer_heartbeat.drop(ctx, current)
        del ctx.groups[group_id]
    stored = shard.consumer_durable.get(group_id)
    if stored is None:
        revert(ctx, group_id)
        return
    g = consumer_durability.restore(ctx, stored.group, stored.members.values())
    ctx.groups[group_id] = g
    ctx.event(events.GroupReverted(group_id, g.group_epoch, g.state.value, len(g.members)))


def revert(ctx: Context, group_id: str) -> None:
    """Roll the group back to its last durable snapshot (or forget it: never stored)."""
    shard = ctx.shard
    fail_held(ctx, group_id)
    shard.unstored.pop(group_id, None)  # what is still in flight is stale now
    current = ctx.classic(group_id)
    heartbeats: dict[tuple[str, str], int] = {}
    if current is not None:
        del ctx.groups[group_id]
        _unpark(ctx, current)
        for m in current.members.values():
            heartbeats[(group_id, m.member_id)] = m.last_heartbeat_ms
    snapshot = shard.durable.get(group_id)
    if snapshot is not None:
        # A session that ran out (what the failed write was about) is not re-armed in the
        # past: that would expire the member again at once and, while the store is down,
        # spin expire -> write fails -> revert. The member gets a whole session, as on a
        # load; its expiry is retried once that runs out.
        for mr in snapshot.members:
            key = (group_id, mr.member_id)
            last = max(mr.last_heartbeat_ms, heartbeats.get(key, 0))
            if last + mr.session_timeout_ms <= ctx.now:
                heartbeats[key] = ctx.now
    if snapshot is None and not shard.offsets.has_any(group_id):
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
        fail_held(ctx, group_id)
        shard.unstored.pop(group_id, None)
        shard.durable.pop(group_id, None)
        shard.consumer_durable.pop(group_id, None)
        shard.deleting.pop(group_id, None)
        shard.offsets.take(group_id)
        g = ctx.groups.pop(group_id, None)
        if g is None:
            continue
        if isinstance(g, ConsumerGroup):
            consumer_heartbeat.drop(ctx, g)
            ctx.event(events.GroupUnloaded(group_id, g.group_epoch, len(g.members)))
            continue
        _unpark(ctx, g)
        for member_id in g.members:
            shard.checkpointed.pop((group_id, member_id), None)
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
