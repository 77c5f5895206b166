"""Committed offsets (spec 4.4 OffsetCommit, 4.12): commit, fetch, delete, expire.

Mixed into ``GroupCoordinator``; offsets live on the group object so that deleting a group
deletes its offsets, and a "simple" group (no protocol type, created by a commit with
generation -1) exists only to hold them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.consumer import CONSUMER_PROTOCOL_TYPE, decode_subscription
from protocol.errors import DecodeError, ErrorCode

from . import events
from .effects import Effects
from .group import ClassicGroup, OffsetEntry
from .records import OffsetCommitRecord, OffsetDeleteRecord
from .requests import OffsetCommitInput
from .results import OffsetCommitResult, OffsetFetchResult
from .states import GroupState

if TYPE_CHECKING:
    from .config import GroupConfig
    from .member import Member

E = GroupState.EMPTY
PR = GroupState.PREPARING_REBALANCE
CR = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

NO_OFFSET = -1


class OffsetsMixin:
    groups: dict[str, ClassicGroup]
    config: GroupConfig
    wall_ms: Callable[[], int]

    if TYPE_CHECKING:

        def _restart_session(self, out: Effects, g: ClassicGroup, m: Member, now: int) -> None: ...
        def _member_error(self, g: ClassicGroup, member_id: str, instance: str | None) -> int: ...
        def _delete_group(self, out: Effects, g: ClassicGroup, reason: str) -> None: ...

    # -- OffsetCommit ----------------------------------------------------------------------

    def commit_offsets(self, token: object, req: OffsetCommitInput, now_ms: int) -> Effects:
        out = Effects()
        error = self._commit_error(out, req, now_ms)
        if error:
            out.reply(token, OffsetCommitResult(
                [(t, [(p, error) for p, *_ in parts]) for t, parts in req.topics]
            ))
            return out
        g = self.groups[req.group_id]
        wall = self.wall_ms()
        expire = wall + req.retention_time_ms if req.retention_time_ms >= 0 else None
        results: list[tuple[str, list[tuple[int, int]]]] = []
        stored = 0
        for topic, parts in req.topics:
            answers = []
            for partition, offset, epoch, metadata in parts:
                text = metadata or ""
                if len(text) > self.config.offset_metadata_max_bytes:
                    answers.append((partition, int(ErrorCode.OFFSET_METADATA_TOO_LARGE)))
                    continue
                g.offsets[(topic, partition)] = OffsetEntry(offset, epoch, text, wall, expire)
                out.records.append(
                    OffsetCommitRecord(req.group_id, topic, partition, offset, epoch, text, wall,
                                       expire)
                )
                stored += 1
                answers.append((partition, 0))
            results.append((topic, answers))
        if stored:
            out.events.append(events.OffsetsCommitted(req.group_id, stored))
        out.reply(token, OffsetCommitResult(results))
        return out

    def _commit_error(self, out: Effects, req: OffsetCommitInput, now: int) -> int:
        g = self.groups.get(req.group_id)
        if g is None:
            if req.generation_id < 0:
                # A commit outside any group membership creates a "simple" group.
                self.groups[req.group_id] = ClassicGroup(req.group_id, empty_since_wall_ms=self.wall_ms())
                return 0
            return ErrorCode.GROUP_ID_NOT_FOUND if req.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if g.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and g.state is E:
            return 0  # manual commits to an empty group: no member checks
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self._member_error(g, req.member_id, req.group_instance_id)
            if error:
                return error
            if req.generation_id != g.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        else:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.state is CR:
            return ErrorCode.REBALANCE_IN_PROGRESS
        # A commit from a member keeps it alive (PreparingRebalance and Stable).
        self._restart_session(out, g, g.members[req.member_id], now)
        return 0

    # -- OffsetFetch -------------------------------------------------------------------------

    def fetch_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None, now_ms: int
    ) -> OffsetFetchResult:
        g = self.groups.get(group_id)
        offsets = g.offsets if g is not None and g.state is not DEAD else {}
        if topics is None:
            by_topic: dict[str, list[tuple[int, int, int, str | None, int]]] = {}
            for (topic, partition), entry in sorted(offsets.items()):
                by_topic.setdefault(topic, []).append(
                    (partition, entry.offset, entry.leader_epoch, entry.metadata, 0)
                )
            return OffsetFetchResult(0, list(by_topic.items()))
        result = []
        for topic, partitions in topics:
            rows: list[tuple[int, int, int, str | None, int]] = []
            for p in partitions:
                entry = offsets.get((topic, p))
                if entry is None:
                    rows.append((p, NO_OFFSET, -1, "", 0))
                else:
                    rows.append((p, entry.offset, entry.leader_epoch, entry.metadata, 0))
            result.append((topic, rows))
        return OffsetFetchResult(0, result)

    # -- OffsetDelete ------------------------------------------------------------------------

    def delete_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]], now_ms: int
    ) -> tuple[int, list[tuple[str, int, int]], Effects]:
        out = Effects()
        g = self.groups.get(group_id)
        if g is None or g.state is DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, [], out
        subscribed: set[str] | None = set()
        if g.state is not E:
            if g.protocol_type != CONSUMER_PROTOCOL_TYPE:
                return ErrorCode.NON_EMPTY_GROUP, [], out
            subscribed = subscribed_topics(g)
        results = []
        for topic, partitions in topics:
            for p in partitions:
                if subscribed is None or topic in subscribed:
                    results.append((topic, p, int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)))
                    continue
                if g.offsets.pop((topic, p), None) is not None:
                    out.records.append(OffsetDeleteRecord(group_id, topic, p))
                results.append((topic, p, 0))
        return 0, results, out

    # -- retention (spec 4.12, v5+ semantics) -----------------------------------------------

    def expire_offsets(self, now_ms: int, retention_ms: int) -> Effects:
        out = Effects()
        wall = self.wall_ms()
        for g in list(self.groups.values()):
            if g.state is DEAD:
                continue
            expired = [key for key, entry in g.offsets.items()
                       if _expired(g, key[0], entry, wall, retention_ms)]
            for topic, partition in expired:
                del g.offsets[(topic, partition)]
                out.records.append(OffsetDeleteRecord(g.group_id, topic, partition))
            if g.state is E and not g.offsets and not g.members:
                self._delete_group(out, g, "empty with no offsets left")
        return out


def _expired(g: ClassicGroup, topic: str, entry: OffsetEntry, wall: int, retention: int) -> bool:
    if entry.expire_timestamp_ms is not None:
        return wall >= entry.expire_timestamp_ms  # explicit v2-4 retention
    if g.protocol_type is None:
        return wall >= entry.commit_timestamp_ms + retention  # simple group: per commit
    if g.state is E:
        since = g.empty_since_wall_ms if g.empty_since_wall_ms is not None else wall
        return wall >= since + retention
    if g.state is STABLE and g.protocol_type == CONSUMER_PROTOCOL_TYPE:
        subscribed = subscribed_topics(g)
        if subscribed is not None and topic not in subscribed:
            return wall >= entry.commit_timestamp_ms + retention
    return False


def subscribed_topics(g: ClassicGroup) -> set[str] | None:
    """Topics a consumer group subscribes to; None if a subscription cannot be parsed (then
    Kafka assumes everything is subscribed)."""
    topics: set[str] = set()
    for m in g.members.values():
        try:
            _, sub = decode_subscription(m.metadata_for(g.protocol_name))
        except DecodeError:
            return None
        topics.update(sub.topics)
    return topics
