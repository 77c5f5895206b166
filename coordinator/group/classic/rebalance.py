"""The rebalance machinery (spec 4.5, 4.6): starting a join phase, completing it, handing
out the assignment and the timers that bound each phase.

A join phase completes when every member (and no pending KIP-394 id) has a parked JoinGroup,
or when the join timer fires; members that did not rejoin by then are dropped (dynamic
ones only, spec 4.7). Completion is O(members): one pass removes the absent, one answers
the parked JoinGroups.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from .. import events
from ..context import Context
from ..deadlines import join_key, sync_key
from ..events import RebalanceTrigger, RemovalCause
from ..results import JoinGroupResult, SyncGroupResult
from .group import ClassicGroup
from .member import Member
from .states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from .subscriptions import subscribed_topics


def remove_member(
    ctx: Context,
    g: ClassicGroup,
    member: Member,
    reason: str,
    cause: RemovalCause,
    client_reason: str | None = None,
) -> None:
    """Drop a member: answer what it has parked, stop its session timer."""
    token = g.take_join(member)
    if token is not None:
        # Kafka answers a removed member's parked JoinGroup with 25 and MemberId "".
        ctx.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
    if member.sync_token is not None:
        # Kafka leaves such a SyncGroup unanswered; we must answer every request.
        ctx.reply(member.sync_token, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.sync_token = None
    ctx.cancel(member.heartbeat_key)
    g.remove(member.member_id)
    ctx.event(
        events.MemberRemoved(
            g.group_id, member.member_id, member.group_instance_id, reason, cause, client_reason
        )
    )


def maybe_prepare_rebalance_or_complete_join(
    ctx: Context, g: ClassicGroup, reason: str, trigger: RebalanceTrigger
) -> None:
    if g.can_rebalance():
        prepare_rebalance(ctx, g, reason, trigger)
    else:
        maybe_complete_join_phase(ctx, g)


def maybe_complete_join_phase(ctx: Context, g: ClassicGroup) -> None:
    # The initial rebalance (entered from Empty) always waits for its delay timer.
    if (
        g.state is PREPARING_REBALANCE
        and g.previous_state is not EMPTY
        and g.has_all_members_joined()
    ):
        complete_join(ctx, g)


def prepare_rebalance(
    ctx: Context, g: ClassicGroup, reason: str, trigger: RebalanceTrigger
) -> None:
    if g.state is COMPLETING_REBALANCE:
        # The generation being synced is abandoned: its members must rejoin.
        for m in g.members.values():
            m.assignment = b""
        propagate_assignment(ctx, g, ErrorCode.REBALANCE_IN_PROGRESS)
    g.pending_sync_members.clear()
    ctx.cancel(sync_key(g.group_id))
    initial = g.state is EMPTY
    if initial:
        # Spec 4.5: wait `delay` for more members; each newcomer may buy another delay,
        # up to the first member's rebalance timeout.
        delay = ctx.config.initial_rebalance_delay_ms
        g.join_timer_is_initial = True
        g.new_member_added = False
        g.initial_delay_ms = delay
        g.initial_remaining_ms = max(g.rebalance_timeout_ms() - delay, 0)
        ctx.arm_join_timer(g, delay)
    ctx.transition(g, PREPARING_REBALANCE)
    g.rebalance_started_ms = ctx.now
    ctx.event(events.RebalanceStarted(g.group_id, g.generation_id, reason, trigger))
    if not initial:
        if g.has_all_members_joined():
            complete_join(ctx, g)
        else:
            arm_rebalance_timeout(ctx, g)


def arm_rebalance_timeout(ctx: Context, g: ClassicGroup) -> None:
    g.join_timer_is_initial = False
    ctx.arm_join_timer(g, g.rebalance_timeout_ms())


def join_timer_fired(ctx: Context, g: ClassicGroup) -> None:
    if g.state is not PREPARING_REBALANCE:
        return
    if not g.join_timer_is_initial:
        complete_join(ctx, g)
    elif g.new_member_added and g.initial_remaining_ms != 0:
        delay = g.initial_delay_ms
        g.new_member_added = False
        g.initial_delay_ms = min(ctx.config.initial_rebalance_delay_ms, g.initial_remaining_ms)
        g.initial_remaining_ms = max(g.initial_remaining_ms - delay, 0)
        ctx.arm_join_timer(g, g.initial_delay_ms)
    else:
        complete_join(ctx, g)


def complete_join(ctx: Context, g: ClassicGroup) -> None:
    ctx.cancel(join_key(g.group_id))
    g.join_timer_is_initial = False
    absent = [m for m in g.members.values() if m.join_token is None and m.group_instance_id is None]
    for m in absent:
        remove_member(
            ctx, g, m, "did not rejoin before the rebalance timeout", RemovalCause.REBALANCE_TIMEOUT
        )
    if g.state is DEAD:
        return
    if not g.maybe_elect_new_joined_leader() and g.members:
        # Only static members that have not rejoined remain: wait another rebalance timeout
        # (testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember).
        arm_rebalance_timeout(ctx, g)
        return
    g.generation_id += 1
    join_ms = ctx.elapsed_ms(g.state_timestamp_ms)
    if not g.members:
        g.protocol_name = None
        g.subscribed_topics = subscribed_topics(g)
        g.pending_sync_members.clear()
        ctx.transition(g, EMPTY)
        ctx.event(events.JoinCompleted(g.group_id, g.generation_id, 0, None, None, join_ms))
        ctx.persist(g)
        return
    g.protocol_name = g.select_protocol()
    g.subscribed_topics = subscribed_topics(g)
    g.pending_sync_members.clear()
    ctx.transition(g, COMPLETING_REBALANCE)
    everyone = g.current_members_list()
    for m in g.members.values():
        token = g.take_join(m)
        if token is not None:
            is_leader = g.is_leader(m.member_id)
            ctx.reply_when_stored(
                g.group_id,
                token,
                JoinGroupResult(
                    error_code=0,
                    generation_id=g.generation_id,
                    protocol_type=g.protocol_type,
                    protocol_name=g.protocol_name,
                    leader=g.leader_id or "",
                    member_id=m.member_id,
                    members=everyone if is_leader else [],
                ),
            )
        ctx.restart_session(g, m)
        m.is_new = False
        g.pending_sync_members.add(m.member_id)
    ctx.arm_sync_timer(g, g.rebalance_timeout_ms())
    ctx.event(
        events.JoinCompleted(
            g.group_id, g.generation_id, len(g.members), g.leader_id, g.protocol_name, join_ms
        )
    )
    ctx.persist(g)


def propagate_assignment(ctx: Context, g: ClassicGroup, error: int) -> None:
    """Answer every parked SyncGroup: its assignment, or ``error``."""
    protocol_type = g.protocol_type if error == 0 else None
    protocol_name = g.protocol_name if error == 0 else None
    for m in g.members.values():
        token = m.sync_token
        if token is not None:
            m.sync_token = None
            result = SyncGroupResult(error, protocol_type, protocol_name, m.assignment)
            if error:
                ctx.reply(token, result)
            else:
                ctx.reply_when_stored(g.group_id, token, result)
            # Its session expiry was ignored while it waited; give it a fresh session.
            ctx.restart_session(g, m)


def sync_timer_fired(ctx: Context, g: ClassicGroup, generation_id: int) -> None:
    """Members that never sent SyncGroup for this generation are dropped (spec 4.5)."""
    if generation_id != g.generation_id or g.state not in (COMPLETING_REBALANCE, STABLE):
        return
    if not g.pending_sync_members:
        return
    for member_id in list(g.pending_sync_members):
        member = g.members[member_id]
        reason = "no SyncGroup before the rebalance timeout"
        remove_member(ctx, g, member, reason, RemovalCause.SYNC_TIMEOUT)
    prepare_rebalance(
        ctx,
        g,
        "members failed to sync before the rebalance timeout",
        RebalanceTrigger.SYNC_TIMEOUT,
    )
