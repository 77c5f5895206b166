"""Online migration between the classic and the consumer protocol (KIP-848; Kafka's
group.consumer.migration.policy, default ``bidirectional``).

- **Upgrade.** A consumer-protocol member joining a classic group with members converts
  it into a consumer group (``to_consumer``): every classic member becomes a member of
  the consumer group with its subscription and assignment, at the generation as its
  epoch, so nobody loses a partition; the joiner then bumps the epoch and the classic
  members are told to rejoin (parked requests answered REBALANCE_IN_PROGRESS, and their
  heartbeats after), taking their next steps through JoinGroup (``consumer/classic.py``).
  Refused, as Kafka refuses it, when the policy disallows upgrades, when the group does
  not use the consumer embedded protocol, or when it has more members than
  group.consumer.max.size: the joiner is told GROUP_ID_NOT_FOUND.
- **Downgrade.** When the last consumer-protocol member leaves a consumer group whose
  other members all speak the classic protocol, the group becomes a classic group again
  (``to_classic``): the members keep their assignments at the group epoch as the
  generation, and a rebalance starts so that they rejoin it as a classic group. Refused
  when the policy disallows downgrades or the group has more than group.max.size members.

The offsets stay with the group id in the offsets manager, whatever its kind.
"""

from __future__ import annotations

from protocol.consumer import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)
from protocol.errors import DecodeError, ErrorCode

from . import events
from .classic.group import ClassicGroup
from .classic.member import Member
from .classic.rebalance import prepare_rebalance
from .classic.states import STABLE
from .classic.subscriptions import subscribed_topics
from .consumer import classic as consumer_classic
from .consumer import coalesce as consumer_coalesce
from .consumer import durability as consumer_durability
from .consumer import heartbeat as consumer_heartbeat
from .consumer import sessions as consumer_sessions
from .consumer.group import ConsumerGroup
from .consumer.member import ClassicMetadata, ConsumerMember, MemberState, Partitions
from .context import Context
from .deadlines import (
    consumer_rebalance_key,
    consumer_session_key,
    heartbeat_key,
    join_key,
    sync_key,
)
from .events import RebalanceTrigger
from .model import CLASSIC, CONSUMER
from .results import JoinGroupResult, SyncGroupResult


def upgrade_refusal(ctx: Context, g: ClassicGroup) -> str | None:
    """Why the classic group may not become a consumer group now (Kafka's
    validateOnlineUpgrade), or None."""
    config = ctx.config.consumer
    if not config.upgrade_enabled:
        return "the online upgrade is disabled"
    if g.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return "the group does not use the consumer embedded protocol"
    if len(g.members) > config.max_size:
        return "the group size exceeds the consumer group maximum size"
    return None


def to_consumer(ctx: Context, g: ClassicGroup) -> ConsumerGroup:
    """Convert the classic group, members and assignments kept (``upgrade_refusal`` said
    it may). Raises ``HeartbeatError`` (GROUP_ID_NOT_FOUND) for a member whose embedded
    consumer protocol cannot be read, before anything changed."""
    epoch = g.generation_id
    members = [_consumer_member(g, m, epoch) for m in g.members.values()]
    for m in g.members.values():
        token = g.take_join(m)
        if token is not None:
            ctx.reply(
                token, JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=m.member_id)
            )
        if m.sync_token is not None:
            ctx.reply(m.sync_token, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
            m.sync_token = None
        ctx.cancel(m.heartbeat_key)
    for member_id in g.pending_join_members:
        ctx.cancel(heartbeat_key(g.group_id, member_id))
    ctx.cancel(join_key(g.group_id))
    ctx.cancel(sync_key(g.group_id))
    c = ConsumerGroup(g.group_id, group_epoch=epoch, assignment_epoch=epoch)
    for cm in members:
        c.add(cm)
        c.target[cm.member_id] = dict(cm.assigned)
    c.subscription_metadata = consumer_heartbeat.subscription_metadata(ctx, c)
    c.dirty = True
    c.reported_state = c.state
    ctx.groups[g.group_id] = c
    for cm in members:
        consumer_sessions.schedule_session(ctx, c, cm)
    reason = "a consumer-protocol member joined"
    ctx.event(events.GroupConverted(g.group_id, CLASSIC, CONSUMER, epoch, len(members), reason))
    return c


def _consumer_member(g: ClassicGroup, m: Member, epoch: int) -> ConsumerMember:
    name = g.protocol_name or (m.protocols[0][0] if m.protocols else "")
    try:
        _version, subscription = decode_subscription(m.metadata_for(name))
        assigned = _partitions(m.assignment)
    except DecodeError:
        raise consumer_heartbeat.HeartbeatError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group {g.group_id} to consumer group because the"
            " embedded consumer protocol is malformed.",
        ) from None
    return ConsumerMember(
        m.member_id,
        instance_id=m.group_instance_id,
        rack_id=subscription.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        subscribed_topic_names=tuple(subscription.topics),
        state=MemberState.STABLE,
        member_epoch=epoch,
        previous_member_epoch=epoch,
        assigned=assigned,
        classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols)),
    )


def _partitions(assignment: bytes) -> Partitions:
    if not assignment:
        return {}
    _version, decoded = decode_assignment(assignment)
    parts: Partitions = {}
    for tp in decoded.assigned_partitions:
        parts[tp.topic] = parts.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return parts


def downgrade_allowed(ctx: Context, g: ConsumerGroup) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember, after the member is gone: only
    classic members are left, and the policy and group.max.size allow it."""
    if not g.members or any(m.classic is None for m in g.members.values()):
        return False
    return ctx.config.consumer.downgrade_enabled and len(g.members) <= ctx.config.max_size


def to_classic(ctx: Context, g: ConsumerGroup, reason: str) -> ClassicGroup:
    """Convert the consumer group (only classic members left), assignments kept, and
    start a rebalance for them to rejoin it as a classic group."""
    consumer_durability.forget(ctx, g.group_id)
    # Heartbeats waiting for a target (coalesce.py) are of members no longer here.
    consumer_coalesce.release(ctx, g, ErrorCode.UNKNOWN_MEMBER_ID)
    c = ClassicGroup(
        g.group_id,
        state_timestamp_ms=ctx.now,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        generation_id=g.group_epoch,
    )
    for m in g.members.values():
        ctx.cancel(consumer_session_key(g.group_id, m.member_id))
        ctx.cancel(consumer_rebalance_key(g.group_id, m.member_id))
        classic = m.classic
        assert classic is not None  # downgrade_allowed
        member = c.new_member(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            classic.session_timeout_ms,
            CONSUMER_PROTOCOL_TYPE,
            list(classic.protocols),
        )
        member.assignment = consumer_classic.encode_partitions(m.assigned)
        c.add(member)
        ctx.restart_session(c, member)
    c.protocol_name = c.select_protocol()
    c.subscribed_topics = subscribed_topics(c)
    # As a load does, the group starts Stable with its members; then they rejoin.
    c.state = c.previous_state = STABLE
    ctx.groups[g.group_id] = c
    ctx.event(
        events.GroupConverted(g.group_id, CONSUMER, CLASSIC, g.group_epoch, len(c.members), reason)
    )
    prepare_rebalance(ctx, c, f"downgraded from a consumer group: {reason}", _DOWNGRADED)
    ctx.persist(c)
    return c


_DOWNGRADED = RebalanceTrigger.MEMBER_LEFT
