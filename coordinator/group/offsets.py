"""Committed offsets (spec 4.4 OffsetCommit, 4.12): commit, fetch, delete and expiry,
for every kind of group (Kafka's OffsetMetadataManager).

Offsets are kept by the offsets manager (``offsets_manager.py``), keyed by group id; the
group decides who may commit, fetch and delete them and when they expire (``model.py``).
Deleting a group deletes them; a "simple" group (no protocol type, created by a commit
with generation -1) exists only to hold them. A commit is pending until the driver
reports it stored (durability.py); only stored offsets are fetched, expired or reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode

from . import events
from .classic.group import ClassicGroup
from .classic.states import DEAD, PREPARING_REBALANCE, STABLE
from .consumer import durability as consumer_durability
from .consumer.group import MEMBER_COMMIT_VERSION, ConsumerGroup
from .context import Context, Shard
from .deadlines import heartbeat_key
from .model import Group
from .offsets_manager import CommitsInFlight
from .records import GroupDeletedRecord, OffsetCommitRecord, OffsetDeleteRecord
from .requests import OffsetCommitInput
from .results import (
    OffsetCommitResult,
    OffsetFetchResult,
    PartitionError,
    PartitionOffset,
    TopicErrors,
    TopicOffsets,
)

#: OffsetCommit v9+ reports an unknown group as such (older versions: ILLEGAL_GENERATION).
GROUP_ID_NOT_FOUND_VERSION = 9
#: RetentionTimeMs -1: the broker's retention applies.
DEFAULT_RETENTION = -1


def commit_offsets(ctx: Context, token: object, req: OffsetCommitInput) -> None:
    error = _validate_commit(ctx, req)
    if error:
        # OffsetCommit has no top-level error: every partition carries it.
        refused = [
            TopicErrors(t.topic, [PartitionError(p.partition, error) for p in t.partitions])
            for t in req.topics
        ]
        ctx.reply(token, OffsetCommitResult(refused))
        return
    g = ctx.groups.get(req.group_id)
    check = g.commit_partition_check(req) if isinstance(g, ConsumerGroup) else None
    _store_commits(ctx, token, req, check)


def _store_commits(
    ctx: Context,
    token: object,
    req: OffsetCommitInput,
    check: Callable[[str, int], int] | None = None,
) -> None:
    """Accept a validated commit: pending until stored (durability.py). ``check`` refuses
    single partitions (a consumer group member's commit at an older epoch, KIP-1251)."""
    expire = _expiry(ctx.now, req.retention_time_ms)
    limit = ctx.config.offset_metadata_max_bytes
    manager = ctx.shard.offsets
    results: list[TopicErrors] = []
    for t in req.topics:
        answers: list[PartitionError] = []
        for p in t.partitions:
            refused = check(t.topic, p.partition) if check is not None else 0
            if refused:
                answers.append(PartitionError(p.partition, refused))
                continue
            text = p.metadata or ""
            if _java_length_exceeds(text, limit):
                answers.append(PartitionError(p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            record = OffsetCommitRecord(
                req.group_id, t.topic, p.partition, p.offset, p.leader_epoch, text, ctx.now, expire
            )
            manager.accept(record)
            ctx.out.records.append(record)
            answers.append(PartitionError(p.partition, ErrorCode.NONE))
        results.append(TopicErrors(t.topic, answers))
    # ``OffsetsCommitted`` is told once the records are stored (durability.written).
    ctx.reply(token, OffsetCommitResult(results))


def _expiry(now: int, retention_time_ms: int) -> int | None:
    return None if retention_time_ms == DEFAULT_RETENTION else now + retention_time_ms


#: A commit as the commit lane reads it: each topic with its partitions' (index, leader
#: epoch, metadata), in request order; their offsets come apart, in the same order.
LaneShape = list[tuple[str, list[tuple[int, int, str | None]]]]


def commit_now(
    shard: Shard,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    retention_time_ms: int,
    api_version: int,
    topics: LaneShape,
    offsets: Sequence[int],
    now: int,
) -> tuple[list[OffsetCommitRecord], str | None, int] | None:
    """``commit_offsets`` of a member of a Stable classic group at its generation, or of a
    consumer group's member at its epoch, every partition taken, without the Effects
    around it (the commit lane, ``handlers/offset_commit_lane.py``): (the records,
    accepted and pending as ``_store_commits`` makes them, the session timer to (re)arm
    or None, its deadline). None, with nothing changed, for anything else: the general
    path answers it (a stale or newer generation or epoch, an unknown member, a simple
    commit, a group rebalancing, metadata too long, a KIP-1251 partition check)."""
    g = shard.groups.get(group_id)
    key: str | None = None
    deadline = 0
    if isinstance(g, ClassicGroup):
        if (
            g.state is not STABLE
            or generation_id != g.generation_id
            or g.validate_member(member_id, group_instance_id)
        ):
            return None
    elif isinstance(g, ConsumerGroup):
        m = g.members.get(member_id)
        if m is None or api_version < MEMBER_COMMIT_VERSION or generation_id != m.member_epoch:
            return None
    else:
        return None
    limit = shard.config.offset_metadata_max_bytes
    for _topic, partitions in topics:
        for p in partitions:
            if p[2] and _java_length_exceeds(p[2], limit):
                return None
    if isinstance(g, ClassicGroup):
        # A commit keeps the member alive, as ``restart_session`` on the general path; the
        # driver hears of it as of a heartbeat (``membership.beat``).
        member = g.members[member_id]
        member.last_heartbeat_ms = now
        deadline = now + member.session_timeout_ms
        if shard.deadlines.move_heartbeat(member.heartbeat_key, group_id, member_id, deadline):
            key = member.heartbeat_key
    expire = _expiry(now, retention_time_ms)
    records = []
    at = 0
    for topic, partitions in topics:
        for partition, leader_epoch, metadata in partitions:
            records.append(
                OffsetCommitRecord(
                    group_id,
                    topic,
                    partition,
                    offsets[at],
                    leader_epoch,
                    metadata or "",
                    now,
                    expire,
                )
            )
            at += 1
    shard.offsets.accept_all(group_id, records)
    return records, key, deadline


def _java_length_exceeds(text: str, limit: int) -> bool:
    """Kafka compares ``String.length()``: UTF-16 code units."""
    if len(text) > limit:
        return True
    if 2 * len(text) <= limit:
        return False
    return len(text.encode("utf-16-le")) // 2 > limit


def _validate_commit(ctx: Context, req: OffsetCommitInput) -> int:
    g = ctx.groups.get(req.group_id)
    if g is None:
        if req.generation_id < 0:
            if ctx.at_group_limit(req.group_id):
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            # Outside group management (admin, manual assignment): a simple group holds them.
            ctx.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=ctx.now)
            return 0
        if req.api_version >= GROUP_ID_NOT_FOUND_VERSION:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.ILLEGAL_GENERATION
    error = g.validate_offset_commit(req)
    if not error and isinstance(g, ClassicGroup) and g.state in (STABLE, PREPARING_REBALANCE):
        ctx.restart_session(g, g.members[req.member_id])  # a commit keeps the member alive
    return error


def fetch_offsets(
    shard: Shard,
    group_id: str,
    topics: list[tuple[str, list[int]]] | None,
    require_stable: bool = False,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> OffsetFetchResult:
    """Stored offsets, state independent; unknown groups and partitions read as offset -1
    (spec 4.12). With ``require_stable`` (OffsetFetch v7+), a partition with a commit not
    yet stored is UNSTABLE_OFFSET_COMMIT: the client retries until it is settled. A
    consumer group checks the member the fetch names (OffsetFetch v9+)."""
    g = shard.groups.get(group_id)
    if g is not None:
        error = g.validate_offset_fetch(member_id, member_epoch)
        if error:
            return OffsetFetchResult(error, [])
    live = g is not None and g.state_name != DEAD.value
    offsets = shard.offsets.of(group_id) if live else {}
    pending = shard.offsets.pending_of(group_id) if live and require_stable else {}
    if topics is None:
        result = [
            TopicOffsets(topic, [_fetched(topic, p, e, pending) for p, e in parts.items()])
            for topic, parts in offsets.items()
        ]
        return OffsetFetchResult(0, result)
    result = []
    for topic, partitions in topics:
        known = offsets.get(topic, {})
        result.append(
            TopicOffsets(topic, [_fetched(topic, p, known.get(p), pending) for p in partitions])
        )
    return OffsetFetchResult(0, result)


def _fetched(
    topic: str,
    partition: int,
    committed: OffsetCommitRecord | None,
    pending: CommitsInFlight,
) -> PartitionOffset:
    if pending and (topic, partition) in pending:
        return PartitionOffset(partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
    if committed is None:
        return PartitionOffset(partition, -1, -1, "")
    return PartitionOffset(partition, committed.offset, committed.leader_epoch, committed.metadata)


def delete_offsets(
    ctx: Context, group_id: str, topics: list[tuple[str, list[int]]]
) -> tuple[int, list[TopicErrors]]:
    """OffsetDelete: (top-level error, per-partition errors)."""
    g = ctx.groups.get(group_id)
    if g is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, []
    error = g.validate_offset_delete()
    if error:
        return error, []
    manager = ctx.shard.offsets
    results: list[TopicErrors] = []
    for topic, partitions in topics:
        if g.is_subscribed_to_topic(topic):
            subscribed = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            results.append(TopicErrors(topic, [PartitionError(p, subscribed) for p in partitions]))
            continue
        for p in partitions:
            # A commit still in flight is deleted too: it is written before the deletion.
            if manager.delete(group_id, topic, p):
                ctx.out.records.append(OffsetDeleteRecord(group_id, topic, p))
        results.append(TopicErrors(topic, [PartitionError(p, ErrorCode.NONE) for p in partitions]))
    return 0, results


def delete_group(ctx: Context, g: Group, reason: str) -> None:
    """The group and its offsets are gone (DeleteGroups, or expiry of an empty group)."""
    if isinstance(g, ClassicGroup):
        for member_id in g.pending_join_members:
            ctx.cancel(heartbeat_key(g.group_id, member_id))
        ctx.transition(g, DEAD)
    else:
        # The consumer group's own records go, then (as for any group) its offsets.
        consumer_durability.forget(ctx, g.group_id)
    # Should the tombstone not be stored, the group's offsets come back as stored.
    kept = ctx.shard.offsets.take(g.group_id)
    del ctx.groups[g.group_id]
    record = GroupDeletedRecord(g.group_id)
    ctx.out.records.append(record)
    ctx.ledger(g.group_id).deleting = (record, kept)
    ctx.event(events.GroupDeleted(g.group_id, reason))


def expire_offsets(ctx: Context, retention_ms: int) -> None:
    """Kafka's periodic cleanup (spec 4.12, OffsetCommit v5+ semantics): expire what the
    group's state allows, then delete empty groups left without offsets."""
    for g in list(ctx.groups.values()):
        if g.state_name == DEAD.value:
            continue
        expired = _expire_group_offsets(ctx, g, retention_ms)
        if expired:
            ctx.event(events.OffsetsExpired(g.group_id, expired))
        if g.is_empty() and not ctx.shard.offsets.has_any(g.group_id):
            delete_group(ctx, g, "empty, and no offsets left")


def _expire_group_offsets(ctx: Context, g: Group, retention_ms: int) -> int:
    """How many offsets expired."""
    offsets = ctx.shard.offsets.of(g.group_id)
    if not offsets:
        return 0
    may_expire, base_of_group = g.offset_expiry()
    if not may_expire:
        return 0
    pending = ctx.shard.offsets.pending_of(g.group_id)
    due: list[tuple[str, int]] = []
    for topic, parts in offsets.items():
        if g.is_subscribed_to_topic(topic):
            continue
        for p, e in parts.items():
            if (topic, p) in pending:
                continue  # a newer commit is being stored; it would outlive the deletion
            if e.expire_timestamp_ms is not None:
                expired = ctx.now >= e.expire_timestamp_ms  # explicit v2-4 retention
            else:
                base = e.commit_timestamp_ms if base_of_group is None else base_of_group
                expired = ctx.now - base >= retention_ms
            if expired:
                due.append((topic, p))
    for topic, p in due:
        ctx.shard.offsets.delete(g.group_id, topic, p)
        ctx.out.records.append(OffsetDeleteRecord(g.group_id, topic, p))
    return len(due)
