"""A KIP-848 member's timers: its session, and its rebalance timeout while it revokes
partitions (keys in ../deadlines.py). Armed by the heartbeat, by a load and by a rollback."""

from __future__ import annotations

from ..context import Context
from ..deadlines import Armed, TimerKind, consumer_rebalance_key, consumer_session_key
from . import group_configs
from .group import ConsumerGroup
from .member import ConsumerMember


def arm_revocation_timer(ctx: Context, g: ConsumerGroup, m: ConsumerMember) -> None:
    """The member has its rebalance timeout to report the revocation done, or it is removed."""
    armed = Armed(
        TimerKind.CONSUMER_REBALANCE,
        ctx.now + max(m.rebalance_timeout_ms, 0),
        g.group_id,
        m.member_id,
        m.member_epoch,
    )
    ctx.deadlines.schedule(ctx.out, consumer_rebalance_key(g.group_id, m.member_id), armed)


def schedule_session(ctx: Context, g: ConsumerGroup, m: ConsumerMember) -> None:
    """A consumer-protocol member's session is the group's; a classic member's its own."""
    timeout = group_configs.session_timeout_ms(ctx, g.group_id)
    if m.classic is not None:
        timeout = m.classic.session_timeout_ms
    ctx.deadlines.schedule_heartbeat(
        ctx.out,
        consumer_session_key(g.group_id, m.member_id),
        g.group_id,
        m.member_id,
        ctx.now + timeout,
        TimerKind.CONSUMER_SESSION,
    )


def cancel_timers(ctx: Context, group_id: str, member_id: str) -> None:
    ctx.cancel(consumer_session_key(group_id, member_id))
    ctx.cancel(consumer_rebalance_key(group_id, member_id))
