"""Members that speak the classic protocol inside a consumer group: the online migration
between the protocols (KIP-848; Kafka's classicGroupJoinToConsumerGroup and the sync,
heartbeat and leave beside it).

A classic member is a ``ConsumerMember`` with ``classic`` metadata: its subscription
comes from its JoinGroup's embedded consumer protocol, the server-side assignor gives it
its target like any member, and it moves towards it one JoinGroup at a time:

- JoinGroup updates the member (a new member or a changed subscription bumps the group
  epoch), computes the target if the epoch is ahead, reconciles the member with the
  partitions its subscription says it still owns (an eager client owns none by then), and
  answers at once with its member epoch as the generation. Nobody is the leader.
- SyncGroup answers with what the member is assigned now (its target, less partitions
  another member has not released yet).
- Heartbeat answers REBALANCE_IN_PROGRESS while the member has not reached the group's
  latest target, so the client rejoins and takes the next step (not merely because the
  group epoch is ahead of the target: KAFKA-20272).
- LeaveGroup removes the member as a consumer-protocol leave does.
"""

from __future__ import annotations

from protocol.consumer import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolAssignment,
    TopicPartition,
    decode_subscription,
    encode_assignment,
)
from protocol.errors import DecodeError, ErrorCode

from ..context import Context, Shard
from ..deadlines import TimerKind, consumer_session_key
from ..events import RemovalCause
from ..requests import JoinGroupInput, LeaveGroupInput, SyncGroupInput
from ..results import JoinGroupResult, LeaveGroupResult, MemberError, SyncGroupResult
from . import heartbeat, sessions
from .group import ConsumerGroup
from .member import ClassicMetadata, ConsumerMember, Partitions

#: JoinGroup v4+: a dynamic member without an id is given one and asked to join again.
REQUIRES_KNOWN_MEMBER_ID_VERSION = 4


def join(ctx: Context, g: ConsumerGroup, token: object, req: JoinGroupInput) -> None:
    try:
        result = _join(ctx, g, req)
    except heartbeat.HeartbeatError as exc:
        result = JoinGroupResult(exc.code, member_id=req.member_id)
    heartbeat.persist_if_changed(ctx, g.group_id)
    ctx.reply_when_stored(g.group_id, token, result)


def _join(ctx: Context, g: ConsumerGroup, req: JoinGroupInput) -> JoinGroupResult:
    if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not req.protocols:
        raise heartbeat.HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    try:
        _version, subscription = decode_subscription(req.protocols[0][1])
    except DecodeError:
        raise heartbeat.HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None
    unknown = not req.member_id
    member_id = heartbeat.new_member_id() if unknown else req.member_id
    if (
        unknown
        and req.group_instance_id is None
        and req.api_version >= REQUIRES_KNOWN_MEMBER_ID_VERSION
    ):
        return JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
    m = _member(ctx, g, member_id, req.group_instance_id, unknown)
    is_new = m.member_id not in g.members
    topics = tuple(subscription.topics)
    subscription_changed = is_new or (topics, None) != (
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
    )
    m.rebalance_timeout_ms = req.rebalance_timeout_ms
    m.rack_id = subscription.rack_id
    m.client_id, m.client_host = req.client_id, req.client_host
    m.classic = ClassicMetadata(req.session_timeout_ms, tuple(req.protocols))
    if subscription_changed:
        g.subscribe(m, topics, None)
    if is_new:
        heartbeat.add_member(ctx, g, m, [name for name, _ in req.protocols])
    else:
        g.touch(m)
    heartbeat.update_epoch(ctx, g, is_new, subscription_changed)
    heartbeat.assign_now(ctx, g)
    owned: Partitions = {}
    for tp in subscription.owned_partitions:
        owned[tp.topic] = owned.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    heartbeat.reconcile(ctx, g, m, owned)
    sessions.schedule_session(ctx, g, m)
    return JoinGroupResult(
        ErrorCode.NONE,
        generation_id=m.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=m.classic.protocol_name,
        member_id=m.member_id,
    )


def _member(
    ctx: Context, g: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool
) -> ConsumerMember:
    if instance_id is None:
        m = g.members.get(member_id)
        if m is None:
            heartbeat.check_room(ctx, g)
            return ConsumerMember(member_id)
        if m.classic is None:  # a consumer-protocol member's id
            raise heartbeat.HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
        return m
    owner = g.static_member(instance_id)
    if owner is None:
        heartbeat.check_room(ctx, g)
        return ConsumerMember(member_id, instance_id=instance_id)
    if owner.member_id == member_id:
        return owner
    if not unknown:
        raise heartbeat.HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
    # A static member back under a new id takes over its instance's assignment (KIP-345).
    return heartbeat.replace_static(ctx, g, owner, member_id)


def _classic_member(
    g: ConsumerGroup, member_id: str, instance_id: str | None
) -> tuple[int, ConsumerMember | None]:
    """(error code, the member) for a classic request naming a member."""
    m = g.members.get(member_id)
    if m is None or m.classic is None:
        return ErrorCode.UNKNOWN_MEMBER_ID, None
    if instance_id is not None and m.instance_id != instance_id:
        return ErrorCode.FENCED_INSTANCE_ID, None
    return 0, m


def sync(ctx: Context, g: ConsumerGroup, token: object, req: SyncGroupInput) -> None:
    error, m = _classic_member(g, req.member_id, req.group_instance_id)
    if m is not None and req.generation_id != m.member_epoch:
        error = ErrorCode.ILLEGAL_GENERATION
    elif (
        m is not None
        and m.classic is not None
        and (
            (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE)
            or (req.protocol_name is not None and req.protocol_name != m.classic.protocol_name)
        )
    ):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if error or m is None or m.classic is None:
        ctx.reply(token, SyncGroupResult(error))
        return
    sessions.schedule_session(ctx, g, m)
    result = SyncGroupResult(
        0, CONSUMER_PROTOCOL_TYPE, m.classic.protocol_name, encode_partitions(m.assigned)
    )
    ctx.reply_when_stored(g.group_id, token, result)


def encode_partitions(parts: Partitions) -> bytes:
    """The embedded consumer protocol's assignment of ``parts`` (version 0, which every
    client reads)."""
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[
            TopicPartition(topic=topic, partitions=sorted(ps))
            for topic, ps in sorted(parts.items())
        ]
    )
    return encode_assignment(assignment, 0)


def beat(
    shard: Shard,
    g: ConsumerGroup,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
    now: int,
) -> tuple[int, str | None, int]:
    """A classic Heartbeat (``membership.beat``'s contract: error, timer key to arm or
    None, deadline): REBALANCE_IN_PROGRESS while the member is behind the latest target."""
    error, m = _classic_member(g, member_id, instance_id)
    if m is None or m.classic is None:
        return error, None, 0
    if generation_id != m.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION, None, 0
    key = consumer_session_key(g.group_id, member_id)
    deadline = now + m.classic.session_timeout_ms
    moved = shard.deadlines.move_heartbeat(
        key, g.group_id, member_id, deadline, TimerKind.CONSUMER_SESSION
    )
    # A newer target than the member has reached means rejoining; a group epoch ahead of the
    # target while heartbeats wait for it (the assignment interval, coalesce.py) does not
    # (KAFKA-20272, Kafka 4.3). With nothing waiting (a member left), the classic member's
    # JoinGroup is what computes the newer target, so it is told to rejoin.
    behind = not m.is_reconciled_to(g.assignment_epoch) or (
        g.group_epoch > g.assignment_epoch and not g.held
    )
    return (ErrorCode.REBALANCE_IN_PROGRESS if behind else 0), key if moved else None, deadline


def leave(ctx: Context, g: ConsumerGroup, token: object, req: LeaveGroupInput) -> None:
    results = []
    for leaving in req.members:
        if ctx.consumer(g.group_id) is not g:  # downgraded by an earlier one: gone
            results.append(MemberError(leaving.member_id, leaving.group_instance_id, 25))
            continue
        member_id = leaving.member_id
        if not member_id and leaving.group_instance_id is not None:
            owner = g.static_member(leaving.group_instance_id)
            member_id = owner.member_id if owner is not None else ""
        error, m = _classic_member(g, member_id, leaving.group_instance_id)
        if m is None and member_id in g.members and not leaving.member_id:
            m, error = g.members[member_id], 0  # an admin removing a static member
        if m is not None:
            why = "left the group" + (f" ({leaving.reason})" if leaving.reason else "")
            heartbeat.fence(ctx, g, m, why, RemovalCause.LEFT)
        results.append(MemberError(leaving.member_id, leaving.group_instance_id, error))
    heartbeat.persist_if_changed(ctx, g.group_id)
    ctx.reply_when_stored(g.group_id, token, LeaveGroupResult(0, results))
