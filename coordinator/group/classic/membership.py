"""Heartbeat, LeaveGroup and session expiry (spec 4.3, 4.4, 4.10)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..consumer import classic as consumer_classic
from ..consumer.group import ConsumerGroup
from ..context import Context, Shard
from ..deadlines import heartbeat_key
from ..effects import Schedule
from ..events import RebalanceTrigger, RemovalCause
from ..requests import HeartbeatInput, LeaveGroupInput, LeavingMember
from ..results import HeartbeatResult, LeaveGroupResult, MemberError
from .group import ClassicGroup
from .rebalance import (
    complete_join,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    remove_member,
)
from .states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE


def heartbeat(ctx: Context, token: object, req: HeartbeatInput) -> None:
    """O(1): a lookup, a check, and the session timer moved."""
    error, key, deadline = beat(
        ctx.shard, req.group_id, req.generation_id, req.member_id, req.group_instance_id, ctx.now
    )
    if key is not None:
        ctx.out.timers.append(Schedule(key, deadline))
    ctx.reply(token, HeartbeatResult(error))


def beat(
    shard: Shard,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    now: int,
) -> tuple[int, str | None, int]:
    """A Heartbeat (spec 4.3): (error code, the timer key the driver must (re)arm or None,
    its deadline). The one implementation, for the request path and the heartbeat lane:
    the session moves in place, and the driver hears of it only when its timer would
    otherwise fire late (a new timer, or an earlier deadline); a timer that fires before
    the moved deadline is re-armed then (``Deadlines.take_due``)."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None, 0
    g = shard.groups.get(group_id)
    if isinstance(g, ConsumerGroup):  # a classic member inside a consumer group
        return consumer_classic.beat(shard, g, generation_id, member_id, group_instance_id, now)
    if not isinstance(g, ClassicGroup):  # no such group
        return ErrorCode.UNKNOWN_MEMBER_ID, None, 0
    if g.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, 0
    error = g.validate_member(member_id, group_instance_id)
    if error:
        return error, None, 0
    if generation_id != g.generation_id:
        return ErrorCode.ILLEGAL_GENERATION, None, 0
    if g.state is EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID, None, 0
    m = g.members[member_id]
    m.last_heartbeat_ms = now
    deadline = now + m.session_timeout_ms
    key = m.heartbeat_key
    moved = shard.deadlines.move_heartbeat(key, group_id, member_id, deadline)
    # In PreparingRebalance the session still counts (the member is alive) but it must rejoin.
    error = ErrorCode.REBALANCE_IN_PROGRESS if g.state is PREPARING_REBALANCE else 0
    return error, key if moved else None, deadline


def leave_group(ctx: Context, token: object, req: LeaveGroupInput) -> None:
    if not req.group_id:
        ctx.reply(token, LeaveGroupResult(ErrorCode.INVALID_GROUP_ID))
        return
    g = ctx.classic(req.group_id)
    if g is None:
        unknown = ErrorCode.UNKNOWN_MEMBER_ID
        errors = [MemberError(m.member_id, m.group_instance_id, unknown) for m in req.members]
        ctx.reply(token, LeaveGroupResult(0, errors))
        return
    if g.state is DEAD:
        ctx.reply(token, LeaveGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    results = [_leave_one(ctx, g, m) for m in req.members]
    left = [r.member_id for r in results if r.error_code == 0]
    if left:
        if g.state in (STABLE, COMPLETING_REBALANCE):
            reason = f"LeaveGroup for ({', '.join(left)})"
            maybe_prepare_rebalance_or_complete_join(ctx, g, reason, RebalanceTrigger.MEMBER_LEFT)
        elif g.state is PREPARING_REBALANCE:
            maybe_complete_join_phase(ctx, g)
    ctx.reply(token, LeaveGroupResult(0, results))


def _leave_one(ctx: Context, g: ClassicGroup, leaving: LeavingMember) -> MemberError:
    """One member's LeaveGroup; the response echoes the request's ids (spec 4.4)."""
    member_id, instance, reason = leaving.member_id, leaving.group_instance_id, leaving.reason
    why = "left the group" + (f" ({reason})" if reason else "")
    if not member_id:
        # Admin removal of a static member by instance id (KIP-345).
        target = g.static_members.get(instance) if instance is not None else None
        if target is None:
            return MemberError(member_id, instance, ErrorCode.UNKNOWN_MEMBER_ID)
        remove_member(ctx, g, g.members[target], why, RemovalCause.LEFT, reason)
    elif member_id in g.pending_join_members:
        g.remove(member_id)
        ctx.cancel(heartbeat_key(g.group_id, member_id))
    else:
        error = g.validate_member(member_id, instance)
        if error:
            return MemberError(member_id, instance, error)
        remove_member(ctx, g, g.members[member_id], why, RemovalCause.LEFT, reason)
    return MemberError(member_id, instance, 0)


def heartbeat_timer_fired(ctx: Context, g: ClassicGroup, member_id: str) -> None:
    """A session (or pending id, or new-member join timeout) ran out (spec 4.10)."""
    if g.state is DEAD:
        return
    if member_id in g.pending_join_members:
        g.remove(member_id)
        if g.state is PREPARING_REBALANCE and g.has_all_members_joined():
            complete_join(ctx, g)
        return
    member = g.members.get(member_id)
    if member is None or member.has_satisfied_heartbeat():
        return
    if member.is_new:
        reason, cause = "new member join timeout", RemovalCause.NEW_MEMBER_JOIN_TIMEOUT
    else:
        reason, cause = "session timeout", RemovalCause.SESSION_TIMEOUT
    remove_member(ctx, g, member, reason, cause)
    if g.state in (STABLE, COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(
            ctx, g, f"member {member_id} expired ({reason})", RebalanceTrigger.MEMBER_EXPIRED
        )
    elif g.state is PREPARING_REBALANCE and g.has_all_members_joined():
        # Unlike a join or leave, an expiry completes even the initial rebalance (as Kafka).
        complete_join(ctx, g)
