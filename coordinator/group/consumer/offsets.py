"""Offsets of consumer groups: who may commit and fetch them (Kafka's
ConsumerGroup.validateOffsetCommit / validateOffsetFetch).

A consumer group's offsets are stored exactly as a classic group's: on an empty classic
group of the same id (what a commit outside group management creates), so the commit path,
its durability, fetches, expiry and restarts are the classic ones.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from .. import offsets as classic_offsets
from ..context import Context
from ..group import ClassicGroup
from ..requests import OffsetCommitInput
from ..results import OffsetCommitResult, OffsetFetchResult, PartitionError, TopicErrors
from .group import ConsumerGroup

#: Members of consumer groups commit with OffsetCommit v9+ (which carries the member epoch).
MEMBER_COMMIT_VERSION = 9


def validate_commit(g: ConsumerGroup, req: OffsetCommitInput) -> int:
    # Epoch -1: an admin client or a consumer outside group management; fine when empty.
    if req.generation_id < 0 and not g.members:
        return 0
    m = g.members.get(req.member_id)
    if m is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if req.api_version < MEMBER_COMMIT_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    if req.generation_id != m.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return 0


def commit(ctx: Context, g: ConsumerGroup, token: object, req: OffsetCommitInput) -> None:
    error = validate_commit(g, req)
    if error:
        refused = [
            TopicErrors(t.topic, [PartitionError(p.partition, error) for p in t.partitions])
            for t in req.topics
        ]
        ctx.reply(token, OffsetCommitResult(refused))
        return
    holder = ctx.groups.get(g.group_id)
    if holder is None:
        holder = ClassicGroup(g.group_id, state_timestamp_ms=ctx.now)
        ctx.groups[g.group_id] = holder
    holder.subscribed_topics = g.subscribed_topics()
    classic_offsets.store_commits(ctx, holder, token, req)


def validate_fetch(g: ConsumerGroup, member_id: str | None, member_epoch: int) -> int:
    """OffsetFetch v9+ may name a member: it must be one, at its current epoch."""
    if member_id is None and member_epoch < 0:
        return 0
    m = g.members.get(member_id or "")
    if m is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != m.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return 0


def refused_fetch(error: int) -> OffsetFetchResult:
    return OffsetFetchResult(error, [])


def delete_nothing(
    g: ConsumerGroup, topics: list[tuple[str, list[int]]]
) -> tuple[int, list[TopicErrors]]:
    """OffsetDelete on a consumer group without offsets: (top-level error, per partition)."""
    subscribed = g.subscribed_topics()
    return 0, [
        TopicErrors(
            topic,
            [
                PartitionError(p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if topic in subscribed else 0)
                for p in parts
            ],
        )
        for topic, parts in topics
    ]
