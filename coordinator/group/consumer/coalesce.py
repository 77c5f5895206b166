"""Target assignments coalesced (KIP-1263's group.consumer.assignment.interval.ms).

A heartbeat that finds the group epoch ahead of the target assignment's (a member joined,
left or changed its subscription) does not compute the target itself: it is held, and
the group's ``consumer-assign/<group>`` timer is armed. When it fires, one target is
computed for everything that changed since the last one, and every held heartbeat is
answered from it, in arrival order. So a burst of joins costs one computation, not one
per join, and no member is answered from a target that the next join replaces (it would
have to give back at its next heartbeat, seconds later, what it was just given).

When the timer fires: with an interval of 0, at once (the end of the event-loop turn: the
changes read in one turn share a target). Otherwise it waits while the group keeps
changing, ``QUIET_MS`` at a time; a lone join waits ``QUIET_MS``. Once the interval has
passed since the first held heartbeat, members the current target knows are answered from
it, as Kafka 4.3 answers while a group is Assigning; joining members (they own nothing)
wait on for the burst's one target, at most the heartbeat interval. Kafka 4.3 spaces a
group's targets by the interval and answers every heartbeat at once; a joiner then gets
its assignment at a later heartbeat. Sessions are not affected: a member's restarts when
its heartbeat arrives, not when it is answered.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.errors import ErrorCode

from ..context import Context
from ..deadlines import Armed, TimerKind, consumer_assign_key
from . import group_configs
from .group import ConsumerGroup, WaitingHeartbeat
from .member import ConsumerMember
from .requests import ConsumerHeartbeatResult


def stale(g: ConsumerGroup) -> bool:
    return g.group_epoch > g.assignment_epoch


#: How long a group must go without a change before its held heartbeats are answered
#: (with an assignment interval above 0).
QUIET_MS = 50


def hold(ctx: Context, g: ConsumerGroup, held: WaitingHeartbeat) -> None:
    if not g.held:
        interval = group_configs.assignment_interval_ms(ctx, g.group_id)
        g.held_since_ms, g.held_epoch = ctx.now, g.group_epoch
        _arm(ctx, g, ctx.now + min(QUIET_MS, interval))
    g.held.append(held)


def _arm(ctx: Context, g: ConsumerGroup, due: int) -> None:
    armed = Armed(TimerKind.CONSUMER_ASSIGN, due, g.group_id)
    ctx.deadlines.schedule(ctx.out, consumer_assign_key(g.group_id), armed)


#: Answers one held heartbeat once the target is there (heartbeat.py's last steps).
Finish = Callable[
    [Context, ConsumerGroup, ConsumerMember, WaitingHeartbeat], ConsumerHeartbeatResult
]


def _joiners_wait_ms(ctx: Context, g: ConsumerGroup) -> int:
    """How long, at most, a joining member's first heartbeat waits for its target while
    its group keeps changing: the interval, or the heartbeat interval if longer (Kafka 4.3
    answers a join at once, without an assignment, and the member gets one at a heartbeat
    after the target is computed: up to both intervals later)."""
    return max(
        group_configs.assignment_interval_ms(ctx, g.group_id),
        group_configs.heartbeat_interval_ms(ctx, g.group_id),
    )


def fired(
    ctx: Context,
    g: ConsumerGroup,
    assign: Callable[[Context, ConsumerGroup], None],
    finish: Finish,
) -> None:
    """The group's assignment timer: one new target, then every held heartbeat answered;
    or, while the group still changes, a little later. Past the interval, members the
    current target knows are answered from it (as Kafka 4.3 answers while a group is
    Assigning); joining members wait for the burst's target, up to ``_joiners_wait_ms``,
    so that a burst read over more than the interval still gets one target."""
    interval = group_configs.assignment_interval_ms(ctx, g.group_id)
    changing = bool(g.held) and g.group_epoch != g.held_epoch
    if interval > 0 and changing and ctx.now < g.held_since_ms + _joiners_wait_ms(ctx, g):
        g.held_epoch = g.group_epoch
        if ctx.now >= g.held_since_ms + interval:
            joining = [h for h in g.held if _joining(g, h)]
            for h in g.held:
                if not _joining(g, h):
                    _answer(ctx, g, h, finish)
            g.held = joining
        due = ctx.now + QUIET_MS
        if not g.held or ctx.now < g.held_since_ms + interval:
            due = min(due, g.held_since_ms + interval)
        _arm(ctx, g, min(due, g.held_since_ms + _joiners_wait_ms(ctx, g)))
        return
    if stale(g):
        assign(ctx, g)
    held, g.held = g.held, []
    for h in held:
        _answer(ctx, g, h, finish)


def _joining(g: ConsumerGroup, h: WaitingHeartbeat) -> bool:
    """A member that has never been answered (epoch 0): nothing of it is in the target."""
    m = g.members.get(h.member_id)
    return m is not None and m.member_epoch == 0


def _answer(ctx: Context, g: ConsumerGroup, h: WaitingHeartbeat, finish: Finish) -> None:
    m = g.members.get(h.member_id)
    if m is None:  # fenced or gone while it waited
        ctx.reply(
            h.token,
            ConsumerHeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {h.member_id} is not a member of group {g.group_id}.",
            ),
        )
    else:
        # It shows epochs and an assignment: given once stored (../durability.py).
        ctx.reply_when_stored(g.group_id, h.token, finish(ctx, g, m, h))


def release(ctx: Context, g: ConsumerGroup, error: ErrorCode) -> None:
    """The group is no longer served here: what waits is answered with ``error``."""
    held, g.held = g.held, []
    for h in held:
        ctx.reply(h.token, ConsumerHeartbeatResult(error))
    ctx.cancel(consumer_assign_key(g.group_id))
