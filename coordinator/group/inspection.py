"""A group as readers outside the core see it (the console's group page): one published
view, ``GroupView``, for every kind of group.

It is built here because part of it only the core knows: the assignments DescribeGroups
shows (a classic member's once stored), and when a KIP-848 member last heartbeated (its
session timer's deadline less the session). Readers get plain values: they neither test a
group's class nor build a timer key, and a new kind of group is one more builder here.
"""

from __future__ import annotations

from protocol.consumer import CONSUMER_PROTOCOL_TYPE, decode_assignment
from protocol.errors import DecodeError

from . import admin
from .classic.group import ClassicGroup
from .consumer.group import ConsumerGroup
from .consumer.member import Partitions
from .context import Shard
from .deadlines import consumer_session_key
from .frozen import frozen

#: Partitions as the views give them: topic -> sorted partitions.
TopicPartitions = dict[str, list[int]]


@frozen
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    #: When the coordinator last heard from it (None: not known).
    last_heartbeat_ms: int | None
    leader: bool
    #: What it owns; None when its assignment is not the consumer protocol's or does not
    #: decode (then ``assignment_bytes`` says how large it is).
    assignment: TopicPartitions | None
    #: A classic group's member: the size of its assignment as DescribeGroups shows it.
    assignment_bytes: int | None = None
    #: A consumer group's member: its epoch, reconciliation state, the protocol it speaks
    #: (``consumer``, or ``classic`` during an online migration), what it still has to
    #: revoke and its target assignment.
    epoch: int | None = None
    reconciliation: str | None = None
    protocol: str | None = None
    pending_revocation: TopicPartitions | None = None
    target: TopicPartitions | None = None


@frozen
class GroupView:
    group_id: str
    group_type: str
    state: str
    #: When the group entered its state, as the group keeps it (None: it does not).
    state_since_ms: int | None
    protocol_type: str
    protocol: str
    #: The generation of a classic group, the group epoch of a consumer group.
    generation: int
    leader: str | None
    members: tuple[MemberView, ...]
    #: A consumer group's target assignment epoch.
    assignment_epoch: int | None = None
    #: The heartbeat interval the coordinator gives the members (KIP-848); None when each
    #: member heartbeats at its own (classic).
    heartbeat_interval_ms: int | None = None


def group_view(shard: Shard, group_id: str) -> GroupView | None:
    """The group as it is now, or None when there is none."""
    g = shard.groups.get(group_id)
    if isinstance(g, ConsumerGroup):
        return _consumer_view(shard, g)
    if isinstance(g, ClassicGroup):
        return _classic_view(shard, g)
    return None


def decode_partitions(protocol_type: str | None, data: bytes) -> TopicPartitions | None:
    """A member's assignment as topic -> partitions (consumer protocol), or None when it
    is not the consumer protocol or does not decode."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not data:
        return {}
    try:
        _version, assignment = decode_assignment(data)
    except DecodeError:
        return None
    out: dict[str, list[int]] = {}
    for tp in assignment.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return {t: sorted(set(ps)) for t, ps in sorted(out.items())}


def _classic_view(shard: Shard, g: ClassicGroup) -> GroupView:
    # DescribeGroups' view of the assignments: shown once stored.
    described = admin.describe_group(shard, g.group_id)
    stored = {m.member_id: m.member_assignment for m in described.members}
    protocol_type, protocol = g.described_protocol()
    members = []
    for m in g.members.values():
        data = stored.get(m.member_id, b"")
        members.append(
            MemberView(
                member_id=m.member_id,
                instance_id=m.group_instance_id,
                client_id=m.client_id,
                host=m.client_host,
                session_timeout_ms=m.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                last_heartbeat_ms=m.last_heartbeat_ms or None,
                leader=g.leader_id == m.member_id,
                assignment=decode_partitions(g.protocol_type, data),
                assignment_bytes=len(data),
            )
        )
    return GroupView(
        group_id=g.group_id,
        group_type=g.group_type,
        state=g.state.value,
        state_since_ms=g.state_timestamp_ms,
        protocol_type=protocol_type,
        protocol=protocol,
        generation=g.generation_id,
        leader=g.leader_id,
        members=tuple(members),
    )


def _consumer_view(shard: Shard, g: ConsumerGroup) -> GroupView:
    config = shard.config.consumer
    members = []
    for m in g.members.values():
        # A member speaking the classic protocol (online migration) has its own session.
        session_ms = (
            config.session_timeout_ms if m.classic is None else m.classic.session_timeout_ms
        )
        deadline = shard.deadlines.deadline(consumer_session_key(g.group_id, m.member_id))
        members.append(
            MemberView(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                host=m.client_host,
                session_timeout_ms=session_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                last_heartbeat_ms=None if deadline is None else deadline - session_ms,
                leader=False,
                assignment=_sorted(m.assigned),
                epoch=m.member_epoch,
                reconciliation=m.state.value,
                protocol="consumer" if m.classic is None else "classic",
                pending_revocation=_sorted(m.pending_revocation),
                target=_sorted(g.target.get(m.member_id, {})),
            )
        )
    protocol_type, protocol = g.described_protocol()
    return GroupView(
        group_id=g.group_id,
        group_type=g.group_type,
        state=g.state_name,
        state_since_ms=None,  # the group keeps no state timestamp
        protocol_type=protocol_type,
        protocol=protocol,
        generation=g.group_epoch,
        leader="",
        members=tuple(members),
        assignment_epoch=g.assignment_epoch,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
    )


def _sorted(partitions: Partitions) -> TopicPartitions:
    return {t: sorted(ps) for t, ps in sorted(partitions.items()) if ps}
