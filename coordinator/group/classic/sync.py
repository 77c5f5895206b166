"""SyncGroup (spec 4.4 validation order, 4.6 sync phase).

In CompletingRebalance every SyncGroup parks; the leader's carries the assignment, which is
stored, persisted and handed to every parked member at once (-> Stable). The driver writes
the records of an ``Effects`` before sending its replies, which gives Kafka's "answered only
after the assignment is persisted".
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from .. import events
from ..context import Context
from ..deadlines import sync_key
from ..requests import SyncGroupInput
from ..results import SyncGroupResult
from .group import ClassicGroup
from .rebalance import propagate_assignment
from .states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE

#: SyncGroup v5+ must name the protocol type and name (checked before the group, spec 2.5).
PROTOCOL_REQUIRED_VERSION = 5


def sync_group(ctx: Context, token: object, req: SyncGroupInput) -> None:
    error = _validate(ctx, req)
    if error:
        ctx.reply(token, SyncGroupResult(error))
        return
    g = ctx.classic(req.group_id)
    assert g is not None  # validated
    member = g.members[req.member_id]
    if g.state is PREPARING_REBALANCE:
        ctx.reply(token, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
    elif g.state is COMPLETING_REBALANCE:
        if member.sync_token is not None:
            # A repeated SyncGroup: Kafka drops the first silently; answer it instead.
            ctx.reply(member.sync_token, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_token = token
        _remove_pending_sync_member(ctx, g, req.member_id)
        if g.is_leader(req.member_id):
            _store_assignment(ctx, g, req.assignments)
    else:  # Stable: the assignment is known
        _remove_pending_sync_member(ctx, g, req.member_id)
        result = SyncGroupResult(0, g.protocol_type, g.protocol_name, member.assignment)
        ctx.reply_when_stored(g.group_id, token, result)


def _validate(ctx: Context, req: SyncGroupInput) -> int:
    if req.api_version >= PROTOCOL_REQUIRED_VERSION and (
        req.protocol_type is None or req.protocol_name is None
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if not req.group_id:
        return ErrorCode.INVALID_GROUP_ID
    g = ctx.classic(req.group_id)
    if g is None or g.state is EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if g.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    error = g.validate_member(req.member_id, req.group_instance_id)
    if error:
        return error
    if req.generation_id != g.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if _inconsistent(req.protocol_type, g.protocol_type) or _inconsistent(
        req.protocol_name, g.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return 0


def _inconsistent(given: str | None, expected: str | None) -> bool:
    return given is not None and expected is not None and given != expected


def _remove_pending_sync_member(ctx: Context, g: ClassicGroup, member_id: str) -> None:
    g.pending_sync_members.discard(member_id)
    if not g.pending_sync_members and g.state in (COMPLETING_REBALANCE, STABLE):
        ctx.cancel(sync_key(g.group_id))


def _store_assignment(ctx: Context, g: ClassicGroup, assignments: list[tuple[str, bytes]]) -> None:
    # Members the leader left out get an empty assignment; unknown ids are ignored.
    by_member = dict(assignments)
    for m in g.members.values():
        m.assignment = by_member.get(m.member_id, b"")
    sync_started_ms = g.state_timestamp_ms
    ctx.transition(g, STABLE)
    propagate_assignment(ctx, g, 0)
    ctx.persist(g)
    ctx.event(
        events.SyncCompleted(
            g.group_id,
            g.generation_id,
            duration_ms=ctx.elapsed_ms(sync_started_ms),
            rebalance_duration_ms=(
                None if g.rebalance_started_ms is None else ctx.elapsed_ms(g.rebalance_started_ms)
            ),
            protocol_type=g.protocol_type,
            assignments=tuple((m.member_id, m.assignment) for m in g.members.values()),
        )
    )
