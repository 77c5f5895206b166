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
changing, ``QUIET_MS`` at a time, but no longer than the interval after the first held
heartbeat; a lone join waits ``QUIET_MS``. Kafka 4.3 spaces a group's targets by the
interval instead (answering at once from the target there is); here the interval bounds
how long a heartbeat is held, which a member's session (restarted when the heartbeat
came) never notices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import ErrorCode

from ..context import Context
from ..deadlines import Armed, TimerKind, consumer_assign_key
from .group import ConsumerGroup
from .member import ConsumerMember, Partitions
from .requests import ConsumerHeartbeatResult


@dataclass(slots=True)
class Held:
    """A heartbeat waiting for the group's next target assignment."""

    token: object
    member_id: str
    owned: Partitions | None
    full: bool  # whether the answer carries the assignment even if unchanged
    before: Partitions  # the member's assignment when the request came


def stale(g: ConsumerGroup) -> bool:
    return g.group_epoch > g.assignment_epoch


#: How long a group must go without a change before its held heartbeats are answered
#: (with an assignment interval above 0).
QUIET_MS = 50


def hold(ctx: Context, g: ConsumerGroup, held: Held) -> None:
    if not g.held:
        interval = ctx.config.consumer.assignment_interval_ms
        g.held_since_ms, g.held_epoch = ctx.now, g.group_epoch
        _arm(ctx, g, ctx.now + min(QUIET_MS, interval))
    g.held.append(held)


def _arm(ctx: Context, g: ConsumerGroup, due: int) -> None:
    armed = Armed(TimerKind.CONSUMER_ASSIGN, due, g.group_id)
    ctx.deadlines.schedule(ctx.out, consumer_assign_key(g.group_id), armed)


#: Answers one held heartbeat once the target is there (heartbeat.py's last steps).
Finish = Callable[[Context, ConsumerGroup, ConsumerMember, Held], ConsumerHeartbeatResult]


def fired(
    ctx: Context,
    g: ConsumerGroup,
    assign: Callable[[Context, ConsumerGroup], None],
    finish: Finish,
) -> None:
    """The group's assignment timer: one new target, then every held heartbeat answered;
    or, while the group still changes and the interval allows, a little later."""
    interval = ctx.config.consumer.assignment_interval_ms
    if g.group_epoch != g.held_epoch and ctx.now < g.held_since_ms + interval:
        g.held_epoch = g.group_epoch
        _arm(ctx, g, min(ctx.now + QUIET_MS, g.held_since_ms + interval))
        return
    if stale(g):
        assign(ctx, g)
    held, g.held = g.held, []
    for h in held:
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
            # It shows epochs and an assignment: given once the group's records are stored.
            ctx.reply_when_stored(g.group_id, h.token, finish(ctx, g, m, h))


def release(ctx: Context, g: ConsumerGroup, error: ErrorCode) -> None:
    """The group is no longer served here: what waits is answered with ``error``."""
    held, g.held = g.held, []
    for h in held:
        ctx.reply(h.token, ConsumerHeartbeatResult(error))
    ctx.cancel(consumer_assign_key(g.group_id))
