"""Consumer groups to records and back (the rule the groups share, answers held until
stored and rollback on a failed write, is ../durability.py's). A call that changed a group
writes what changed:
the group's own fields (epochs, subscription metadata), each member changed or added
(with its part of the target assignment), each member removed; so a heartbeat moving one
member writes one record, and a new target assignment writes the members whose target
changed, as Kafka writes the delta.

``restore`` builds a group from what the store holds of it (its records replayed: a load,
or a rollback). As Kafka does on load, every member gets a whole session from then, and a
member that was revoking partitions gets its whole rebalance timeout again.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import assert_never

from ..context import Context
from ..records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    ConsumerRecord,
)
from . import regex, sessions
from .group import ConsumerGroup
from .member import ClassicMetadata, ConsumerMember, MemberState, Partitions


def _lists(parts: Partitions) -> dict[str, list[int]]:
    return {topic: sorted(ps) for topic, ps in sorted(parts.items())}


def _sets(parts: dict[str, list[int]]) -> Partitions:
    return {topic: frozenset(ps) for topic, ps in parts.items()}


def _epochs(m: ConsumerMember, parts: Partitions) -> dict[str, list[int]]:
    """The epoch each partition was got at, in the order ``_lists`` writes them."""
    return {
        topic: [m.assignment_epoch(topic, p) or 0 for p in sorted(ps)]
        for topic, ps in sorted(parts.items())
    }


def _epochs_of(mr: ConsumerMemberRecord) -> dict[str, dict[int, int]]:
    """KIP-1251's epochs as stored; a record without them (or with a list that does not
    match, which Kafka would not write) leaves the member's epoch to count."""
    epochs: dict[str, dict[int, int]] = {}
    for parts, stored in (
        (mr.assigned, mr.assigned_epochs),
        (mr.pending_revocation, mr.pending_revocation_epochs),
    ):
        for topic, ps in parts.items():
            got = stored.get(topic)
            if got is not None and len(got) == len(ps):
                epochs.setdefault(topic, {}).update(zip(ps, got, strict=True))
    return epochs


def _classic(mr: ConsumerMemberRecord) -> ClassicMetadata | None:
    if mr.classic_protocols is None:
        return None
    protocols = tuple((name, base64.b64decode(meta)) for name, meta in mr.classic_protocols)
    return ClassicMetadata(mr.classic_session_timeout_ms or 0, protocols)


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
        assigned_epochs=_epochs(m, m.assigned),
        pending_revocation_epochs=_epochs(m, m.pending_revocation),
        classic_session_timeout_ms=None if m.classic is None else m.classic.session_timeout_ms,
        classic_protocols=None
        if m.classic is None
        else [[name, base64.b64encode(meta).decode()] for name, meta in m.classic.protocols],
    )


def persist(ctx: Context, g: ConsumerGroup) -> None:
    """Write what the call changed, and start afresh. The group's answers wait for these
    records (../durability.py)."""
    records: list[ConsumerRecord] = [
        ConsumerMemberRemovedRecord(g.group_id, m) for m in sorted(g.removed_members)
    ]
    if g.dirty:
        records.append(group_record(g))
    for member_id in sorted(g.dirty_members):
        m = g.members.get(member_id)
        if m is not None:
            records.append(member_record(g, m))
    g.dirty = False
    g.dirty_members.clear()
    g.removed_members.clear()
    ctx.out.records.extend(records)
    for record in records:
        ctx.in_flight(record)


def forget(ctx: Context, group_id: str) -> None:
    record = ConsumerGroupDeletedRecord(group_id)
    ctx.out.records.append(record)
    ctx.in_flight(record)


def overwrite(ctx: Context, g: ConsumerGroup, record: ConsumerRecord) -> None:
    """``record`` landed after the group was rolled back: the store has it, memory does
    not. What memory holds of it is written after it (a restart loads what memory has)."""
    match record:
        case ConsumerMemberRecord() | ConsumerMemberRemovedRecord():
            if record.member_id in g.members:
                g.dirty_members.add(record.member_id)
            else:
                g.removed_members.add(record.member_id)
        case ConsumerGroupDeletedRecord():
            g.dirty = True
            g.dirty_members.update(g.members)
        case ConsumerGroupRecord():
            g.dirty = True
        case _:
            assert_never(record)
    persist(ctx, g)


def restore(
    ctx: Context, record: ConsumerGroupRecord, members: Iterable[ConsumerMemberRecord]
) -> ConsumerGroup:
    """The group as stored, with its members' timers armed from now."""
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
            classic=_classic(mr),
            assignment_epochs=_epochs_of(mr),
        )
        g.add(m)
        g.target[m.member_id] = _sets(mr.target)
        sessions.schedule_session(ctx, g, m)
        if m.pending_revocation:
            sessions.arm_revocation_timer(ctx, g, m)
    g.dirty_members.clear()  # as stored
    g.reported_state = g.state
    return g
