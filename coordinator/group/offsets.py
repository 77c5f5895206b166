"""Committed offsets (spec 4.4 OffsetCommit, 4.12): commit, fetch, delete and expiry.

Offsets live on their group, so deleting a group deletes them; a "simple" group (no
protocol type, created by a commit with generation -1) exists only to hold them. A commit
is pending until the driver reports it stored (durability.py); only stored offsets are
fetched, expired or reported.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from . import events
from .context import Context
from .deadlines import heartbeat_key
from .group import ClassicGroup
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
from .states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from .subscriptions import CONSUMER_PROTOCOL_TYPE, is_subscribed_to_topic

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
    store_commits(ctx, ctx.groups[req.group_id], token, req)


def store_commits(ctx: Context, g: ClassicGroup, token: object, req: OffsetCommitInput) -> None:
    """Accept a validated commit into ``g``: pending until stored (durability.py)."""
    expire = None if req.retention_time_ms == DEFAULT_RETENTION else ctx.now + req.retention_time_ms
    limit = ctx.config.offset_metadata_max_bytes
    results: list[TopicErrors] = []
    for t in req.topics:
        answers: list[PartitionError] = []
        for p in t.partitions:
            text = p.metadata or ""
            if _java_length_exceeds(text, limit):
                answers.append(PartitionError(p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            record = OffsetCommitRecord(
                req.group_id, t.topic, p.partition, p.offset, p.leader_epoch, text, ctx.now, expire
            )
            g.pending_offsets.setdefault((t.topic, p.partition), []).append(record)
            ctx.out.records.append(record)
            answers.append(PartitionError(p.partition, ErrorCode.NONE))
        results.append(TopicErrors(t.topic, answers))
    # ``OffsetsCommitted`` is told once the records are stored (durability.written).
    ctx.reply(token, OffsetCommitResult(results))


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
            if len(ctx.groups) >= ctx.config.max_groups:
                ctx.limit_reached(
                    req.group_id,
                    "max_groups",
                    ctx.config.max_groups,
                    ErrorCode.COORDINATOR_NOT_AVAILABLE,
                )
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            # Outside group management (admin, manual assignment): a simple group holds them.
            ctx.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=ctx.now)
            return 0
        if req.api_version >= GROUP_ID_NOT_FOUND_VERSION:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.ILLEGAL_GENERATION
    if g.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and g.state is EMPTY:
        return 0  # no member checks for commits into an Empty group
    if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
        error = g.validate_member(req.member_id, req.group_instance_id)
        if error:
            return error
        if req.generation_id != g.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    elif g.state is not EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if g.state is COMPLETING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    if g.state in (STABLE, PREPARING_REBALANCE):
        ctx.restart_session(g, g.members[req.member_id])  # a commit keeps the member alive
    return 0


def fetch_offsets(
    groups: dict[str, ClassicGroup],
    group_id: str,
    topics: list[tuple[str, list[int]]] | None,
    require_stable: bool = False,
) -> OffsetFetchResult:
    """Stored offsets, state independent; unknown groups and partitions read as offset -1
    (spec 4.12). With ``require_stable`` (OffsetFetch v7+), a partition with a commit not
    yet stored is UNSTABLE_OFFSET_COMMIT: the client retries until it is settled."""
    g = groups.get(group_id)
    live = g is not None and g.state is not DEAD
    offsets = g.offsets if g is not None and live else {}
    pending = g.pending_offsets if g is not None and live and require_stable else {}
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
    pending: dict[tuple[str, int], list[OffsetCommitRecord]],
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
    if g is None or g.state is DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND, []
    if g.state is not EMPTY and g.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return ErrorCode.NON_EMPTY_GROUP, []
    results: list[TopicErrors] = []
    for topic, partitions in topics:
        if is_subscribed_to_topic(g, topic):
            subscribed = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            results.append(TopicErrors(topic, [PartitionError(p, subscribed) for p in partitions]))
            continue
        known = g.offsets.get(topic)
        for p in partitions:
            # A commit still in flight is deleted too: it is written before the deletion.
            in_flight = g.pending_offsets.pop((topic, p), None)
            stored = known.pop(p, None) if known is not None else None
            if stored is not None or in_flight:
                ctx.out.records.append(OffsetDeleteRecord(group_id, topic, p))
        results.append(TopicErrors(topic, [PartitionError(p, ErrorCode.NONE) for p in partitions]))
        if known is not None and not known:
            del g.offsets[topic]
    return 0, results


def delete_group(ctx: Context, g: ClassicGroup, reason: str) -> None:
    """The group and its offsets are gone (DeleteGroups, or expiry of an Empty group)."""
    for member_id in g.pending_join_members:
        ctx.cancel(heartbeat_key(g.group_id, member_id))
    ctx.transition(g, DEAD)
    # Should the tombstone not be stored, the group comes back as stored, with its offsets.
    kept = ClassicGroup(g.group_id, offsets=dict(g.offsets))
    g.offsets.clear()
    g.pending_offsets.clear()
    del ctx.groups[g.group_id]
    record = GroupDeletedRecord(g.group_id)
    ctx.out.records.append(record)
    ctx.shard.deleting[g.group_id] = (record, kept)
    ctx.event(events.GroupDeleted(g.group_id, reason))


def expire_offsets(ctx: Context, retention_ms: int) -> None:
    """Kafka's periodic cleanup (spec 4.12, OffsetCommit v5+ semantics): expire what the
    group's state allows, then delete Empty groups left without offsets."""
    for g in list(ctx.groups.values()):
        if g.state is DEAD:
            continue
        expired, all_gone = _expire_group_offsets(ctx, g, retention_ms)
        if expired:
            ctx.event(events.OffsetsExpired(g.group_id, expired))
        # The offsets of a consumer group sit on an empty classic group: the consumer
        # group decides when both go (GroupCoordinator.expire_offsets).
        if all_gone and g.state is EMPTY and g.group_id not in ctx.shard.consumer_groups:
            delete_group(ctx, g, "empty, and no offsets left")


def _expire_group_offsets(ctx: Context, g: ClassicGroup, retention_ms: int) -> tuple[int, bool]:
    """(offsets expired, whether none are left)."""
    if not g.offsets:
        return 0, not g.pending_offsets
    if g.protocol_type is None:
        base_of_group = None  # simple group: each offset from its own commit
    elif g.state is EMPTY:
        base_of_group = g.state_timestamp_ms  # from when the group became Empty
    elif (
        g.state is STABLE
        and g.protocol_type == CONSUMER_PROTOCOL_TYPE
        and g.subscribed_topics is not None
    ):
        base_of_group = None  # only unsubscribed topics, from their commit
    else:
        return 0, False
    expired = 0
    for topic in list(g.offsets):
        if is_subscribed_to_topic(g, topic):
            continue
        parts = g.offsets[topic]
        for p, e in list(parts.items()):
            if (topic, p) in g.pending_offsets:
                continue  # a newer commit is being stored; it would outlive the deletion
            if e.expire_timestamp_ms is not None:
                due = ctx.now >= e.expire_timestamp_ms  # explicit v2-4 retention
            else:
                base = e.commit_timestamp_ms if base_of_group is None else base_of_group
                due = ctx.now - base >= retention_ms
            if due:
                del parts[p]
                ctx.out.records.append(OffsetDeleteRecord(g.group_id, topic, p))
                expired += 1
        if not parts:
            del g.offsets[topic]
    return expired, not g.offsets and not g.pending_offsets
