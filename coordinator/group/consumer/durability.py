"""Consumer groups to records and back. A call that changed a group writes what changed:
the group's own fields (epochs, subscription metadata), each member changed or added
(with its part of the target assignment), each member removed; so a heartbeat moving one
member writes one record, and a new target assignment writes the members whose target
changed, as Kafka writes the delta.

At load the latest records rebuild the groups. As Kafka does on load, every member gets a
whole session from the load, and a member that was revoking partitions gets its whole
rebalance timeout again.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..context import Context
from ..records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
)
from . import regex
from .group import ConsumerGroup
from .member import ConsumerMember, MemberState, Partitions


def _lists(parts: Partitions) -> dict[str, list[int]]:
    return {topic: sorted(ps) for topic, ps in sorted(parts.items())}


def _sets(parts: dict[str, list[int]]) -> Partitions:
    return {topic: frozenset(ps) for topic, ps in parts.items()}


def group_record(g: ConsumerGroup) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        g.group_id, g.group_epoch, g.assignment_epoch, dict(g.subscription_metadata)
    )


def member_record(g: ConsumerGroup, m: ConsumerMember) -> ConsumerMemberRecord:
    return ConsumerMemberRecord(
        group_id=g.group_id,
        member_id=m.member_id,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        server_assignor=m.server_assignor,
        state=m.state.value,
        member_epoch=m.member_epoch,
        previous_member_epoch=m.previous_member_epoch,
        assigned=_lists(m.assigned),
        pending_revocation=_lists(m.pending_revocation),
        target=_lists(g.target.get(m.member_id, {})),
    )


def persist(ctx: Context, g: ConsumerGroup) -> None:
    """Write what the call changed, and start afresh."""
    out = ctx.out.records
    out.extend(ConsumerMemberRemovedRecord(g.group_id, m) for m in sorted(g.removed_members))
    if g.dirty:
        out.append(group_record(g))
    for member_id in sorted(g.dirty_members):
        m = g.members.get(member_id)
        if m is not None:
            out.append(member_record(g, m))
    g.dirty = False
    g.dirty_members.clear()
    g.removed_members.clear()


def forget(ctx: Context, group_id: str) -> None:
    ctx.out.records.append(ConsumerGroupDeletedRecord(group_id))


def restore(
    ctx: Context, record: ConsumerGroupRecord, members: Iterable[ConsumerMemberRecord]
) -> ConsumerGroup:
    """The group as stored, with its members' timers armed from now."""
    from .heartbeat import arm_revocation_timer, schedule_session  # the heartbeat's timers

    g = ConsumerGroup(
        record.group_id,
        group_epoch=record.group_epoch,
        assignment_epoch=record.assignment_epoch,
        subscription_metadata=dict(record.subscription_metadata),
    )
    members = list(members)
    patterns = {p for mr in members if (p := mr.subscribed_topic_regex) is not None}
    if patterns:
        limit = ctx.config.consumer.regex_max_bytes
        regex.restore(g, patterns, ctx.shard.topic_names(), limit)
    for mr in members:
        m = ConsumerMember(
            mr.member_id,
            instance_id=mr.instance_id,
            rack_id=mr.rack_id,
            client_id=mr.client_id,
            client_host=mr.client_host,
            rebalance_timeout_ms=mr.rebalance_timeout_ms,
            subscribed_topic_names=tuple(mr.subscribed_topic_names),
            subscribed_topic_regex=mr.subscribed_topic_regex,
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
            arm_revocation_timer(ctx, g, m)
    g.dirty_members.clear()  # as stored
    g.reported_state = g.state
    return g
