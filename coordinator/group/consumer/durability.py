"""Consumer groups to records and back: a whole-group snapshot after every call that
changed a group, and the groups rebuilt from the latest snapshots at load.

As Kafka does on load, every member gets a whole session from the load, and a member
that was revoking partitions gets its whole rebalance timeout again.
"""

from __future__ import annotations

from ..context import Context
from ..deadlines import Armed, TimerKind, consumer_rebalance_key
from ..records import ConsumerGroupDeletedRecord, ConsumerGroupRecord, ConsumerMemberRecord
from .group import ConsumerGroup
from .member import ConsumerMember, MemberState, Partitions


def _lists(parts: Partitions) -> dict[str, list[int]]:
    return {topic: sorted(ps) for topic, ps in sorted(parts.items())}


def _sets(parts: dict[str, list[int]]) -> Partitions:
    return {topic: frozenset(ps) for topic, ps in parts.items()}


def snapshot(g: ConsumerGroup) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        group_id=g.group_id,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        subscription_metadata=dict(g.subscription_metadata),
        members=[
            ConsumerMemberRecord(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topic_names=list(m.subscribed_topic_names),
                server_assignor=m.server_assignor,
                state=m.state.value,
                member_epoch=m.member_epoch,
                previous_member_epoch=m.previous_member_epoch,
                assigned=_lists(m.assigned),
                pending_revocation=_lists(m.pending_revocation),
                target=_lists(g.target.get(m.member_id, {})),
            )
            for m in g.members.values()
        ],
    )


def persist(ctx: Context, g: ConsumerGroup) -> None:
    ctx.out.records.append(snapshot(g))


def forget(ctx: Context, group_id: str) -> None:
    ctx.out.records.append(ConsumerGroupDeletedRecord(group_id))


def restore(ctx: Context, record: ConsumerGroupRecord) -> ConsumerGroup:
    """The group as ``record`` stored it, with its members' timers armed from now."""
    from .heartbeat import schedule_session  # the timers are the heartbeat's

    g = ConsumerGroup(
        record.group_id,
        group_epoch=record.group_epoch,
        assignment_epoch=record.assignment_epoch,
        subscription_metadata=dict(record.subscription_metadata),
    )
    for mr in record.members:
        m = ConsumerMember(
            mr.member_id,
            instance_id=mr.instance_id,
            rack_id=mr.rack_id,
            client_id=mr.client_id,
            client_host=mr.client_host,
            rebalance_timeout_ms=mr.rebalance_timeout_ms,
            subscribed_topic_names=tuple(mr.subscribed_topic_names),
            server_assignor=mr.server_assignor,
            state=MemberState(mr.state),
            member_epoch=mr.member_epoch,
            previous_member_epoch=mr.previous_member_epoch,
            assigned=_sets(mr.assigned),
            pending_revocation=_sets(mr.pending_revocation),
        )
        g.add(m)
        g.target[m.member_id] = _sets(mr.target)
        schedule_session(ctx, g, m)
        if m.pending_revocation:
            armed = Armed(
                TimerKind.CONSUMER_REBALANCE,
                ctx.now + max(m.rebalance_timeout_ms, 0),
                g.group_id,
                m.member_id,
                m.member_epoch,
            )
            ctx.deadlines.schedule(ctx.out, consumer_rebalance_key(g.group_id, m.member_id), armed)
    g.reported_state = g.state
    return g
