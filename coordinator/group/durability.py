"""Nothing is visible before it is durable (issue 22).

The state machine changes a group at once, but what it tells clients must be stored first.
The driver writes each call's records and reports back with ``written(records, ok)``, in
write order. Here:

- Each group's last *durable* snapshot is kept, and its snapshots still in flight.
- Answers that show a generation, leader or assignment (JoinGroup, SyncGroup) are held
  while the group has a snapshot in flight, and released when it is stored. A repeated
  JoinGroup answered from memory therefore waits for the generation it names.
- A commit is *pending* until stored: OffsetFetch reads only stored offsets (a fetch with
  ``require_stable`` is told UNSTABLE_OFFSET_COMMIT for a partition with one pending).
- A failed snapshot write rolls the group back to its last durable snapshot, as Kafka
  reverts a coordinator to its last committed offset when an append fails: parked and
  held requests are answered NOT_COORDINATOR (clients rediscover and rejoin), timers are
  re-armed from the restored members, and a group that was never stored is forgotten.
- A snapshot that lands after its group was rolled back is what the store now holds; the
  group's current state is written after it, so a restart loads what memory has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import assert_never

from protocol.errors import ErrorCode

from . import events
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
from .results import JoinGroupResult, OffsetFetchResult, SyncGroupResult

#: What a request waiting for a failed write is told: Kafka maps a failed append
#: (KAFKA_STORAGE_ERROR) to NOT_COORDINATOR, which clients retry after rediscovery.
WRITE_FAILED = ErrorCode.NOT_COORDINATOR

HeldResult = JoinGroupResult | SyncGroupResult | OffsetFetchResult


@dataclass(slots=True, eq=False)
class Held:
    """The replies one call gave about one group, waiting for records (by identity) to be
    stored: one per call and group, not per reply (a join phase completing answers every
    member at once, and each written record is checked against every ``Held``)."""

    replies: list[tuple[object, HeldResult]]
    waiting: set[int] = field(default_factory=set)


def settle_call(ctx: Context) -> None:
    """At the end of a call: hold the answers given with ``Context.reply_when_stored``
    while their group has snapshots in flight, and give the others."""
    shard = ctx.shard
    batch: dict[str, Held] = {}
    for group_id, token, result in ctx.after_call or ():
        held = batch.get(group_id)
        if held is None:
            in_flight = shard.unstored.get(group_id)
            if not in_flight:
                ctx.reply(token, result)
                continue
            held = batch[group_id] = Held([], {id(r) for r in in_flight})
            shard.held.setdefault(group_id, []).append(held)
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
        case _:
            assert_never(result)


def written(ctx: Context, records: Iterable[Record], ok: bool) -> None:
    """The driver stored ``records`` (``ok``) or failed to; called in write order."""
    for record in records:
        match record:
            case GroupMetadataRecord():
                _snapshot_written(ctx, record, ok)
            case OffsetCommitRecord():
                _commit_written(ctx, record, ok)
            case GroupDeletedRecord():
                _deletion_written(ctx, record, ok)
            case OffsetDeleteRecord() | HeartbeatRecord():
                pass  # nothing is shown from them before they are stored
            case (
                ConsumerGroupRecord()
                | ConsumerMemberRecord()
                | ConsumerMemberRemovedRecord()
                | ConsumerGroupDeletedRecord()
                | GroupConfigRecord()
            ):
                # The heartbeat answer waits for the write (the runtime holds the replies
                # of a call until its records are stored); a failed write is answered
                # NOT_COORDINATOR and the group is not rolled back: the member's next
                # heartbeat, at whichever epoch it holds, is checked as any other.
                pass
            case _:
                assert_never(record)
        _release(ctx, record.group_id, record, ok)


def _snapshot_written(ctx: Context, record: GroupMetadataRecord, ok: bool) -> None:
    shard = ctx.shard
    group_id = record.group_id
    in_flight = shard.unstored.get(group_id, [])
    current = bool(in_flight) and in_flight[0] is record
    if current:
        in_flight.pop(0)
        if not in_flight:
            del shard.unstored[group_id]
    if ok:
        if current:
            shard.durable[group_id] = record
        elif group_id in ctx.groups:
            # It was written after the group was rolled back: what the store holds now...
            shard.durable[group_id] = record
            if group_id not in shard.unstored:
                ctx.persist(ctx.groups[group_id])  # ...is replaced by what memory holds.
        # Else the group was forgotten (rolled back to nothing, or unloaded: it is another
        # node's now); a stale snapshot of a group nobody was answered about stays stored.
    elif current:
        revert(ctx, group_id)


def _commit_written(ctx: Context, record: OffsetCommitRecord, ok: bool) -> None:
    g = ctx.groups.get(record.group_id)
    if g is None:
        return
    key = (record.topic, record.partition)
    pending = g.pending_offsets.get(key)
    if pending is None or not any(r is record for r in pending):
        return  # deleted (OffsetDelete, DeleteGroups) while it was in flight
    pending.remove(record)
    if not pending:
        del g.pending_offsets[key]
    if ok:
        g.offsets.setdefault(record.topic, {})[record.partition] = record


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
    elif record.group_id not in ctx.groups:
        ctx.groups[record.group_id] = entry[1]  # still stored: bring it back as stored
        revert(ctx, record.group_id)


def _release(ctx: Context, group_id: str, record: Record, ok: bool) -> None:
    held = ctx.shard.held.get(group_id)
    if not held:
        return
    key = id(record)
    still: list[Held] = []
    for h in held:
        if key in h.waiting:
            h.waiting.discard(key)
            if not ok:
                _fail(ctx, h)
                continue
        if h.waiting:
            still.append(h)
        else:
            for token, result in h.replies:
                ctx.reply(token, result)
    if still:
        ctx.shard.held[group_id] = still
    else:
        del ctx.shard.held[group_id]


def _fail(ctx: Context, held: Held) -> None:
    for token, result in held.replies:
        ctx.reply(token, failed(result))


def fail_held(ctx: Context, group_id: str) -> None:
    for h in ctx.shard.held.pop(group_id, []):
        _fail(ctx, h)


def fail_all_held(ctx: Context) -> None:
    """Unloading: nothing held will be released (answered NOT_COORDINATOR, as parked
    requests are)."""
    for group_id in list(ctx.shard.held):
        fail_held(ctx, group_id)


def revert(ctx: Context, group_id: str) -> None:
    """Roll the group back to its last durable snapshot (or forget it: never stored)."""
    shard = ctx.shard
    fail_held(ctx, group_id)
    shard.unstored.pop(group_id, None)  # what is still in flight is stale now
    current = ctx.groups.pop(group_id, None)
    heartbeats: dict[tuple[str, str], int] = {}
    if current is not None:
        _unpark(ctx, current)
        for m in current.members.values():
            heartbeats[(group_id, m.member_id)] = m.last_heartbeat_ms
    snapshot = shard.durable.get(group_id)
    offsets = current.offsets if current is not None else {}
    pending = current.pending_offsets if current is not None else {}
    if snapshot is None and not offsets and not pending:
        ctx.event(events.GroupReverted(group_id, None, None, 0))
        return
    g = ClassicGroup(group_id, state_timestamp_ms=ctx.now)
    g.offsets, g.pending_offsets = offsets, pending
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
        shard.deleting.pop(group_id, None)
        g = ctx.groups.pop(group_id, None)
        if g is None:
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
