"""ConsumerGroupHeartbeat (KIP-848): join, heartbeat, leave, and the member timers.

One heartbeat does, in order (Kafka's GroupMetadataManager.consumerGroupHeartbeat):

1. validate the request, find or create the group and the member, check its epoch;
2. apply what the member sent (subscription, assignor, rebalance timeout); a new member, a
   changed subscription, or a change in the subscribed topics' partitions bumps the
   group epoch;
3. restart its session timer; when the group epoch is ahead of the target assignment's,
   hold the heartbeat until the group's next target is computed with the server-side
   assignor (the one most members ask for; uniform by default): one computation for all
   the changes of an event-loop turn or assignment interval (``coalesce.py``);
4. move the member one step towards its target (``reconcile.py``), arming its rebalance
   timer while it must revoke partitions;
5. answer with its epoch, the heartbeat interval and, when it changed or the request was
   a full one, its assignment.

Members of other groups only move on their own heartbeats.
"""

from __future__ import annotations

import base64
import uuid

from coordinator.shared.topic_regex import pattern_bytes
from protocol.errors import ErrorCode

from .. import events
from ..classic.group import ClassicGroup
from ..classic.states import EMPTY
from ..context import Context
from ..deadlines import Armed, TimerKind, consumer_rebalance_key
from ..events import RebalanceTrigger, RemovalCause
from . import coalesce, durability, group_configs, regex, sessions
from .config import DEFAULT_ASSIGNOR
from .group import ConsumerGroup, WaitingHeartbeat
from .member import LEAVE_EPOCH, LEAVE_STATIC_EPOCH, ConsumerMember, Partitions
from .reconcile import next_step
from .requests import CLIENT_MEMBER_ID_VERSION, ConsumerHeartbeatInput, ConsumerHeartbeatResult
from .target import ASSIGNOR_NAMES, update_target


class HeartbeatError(Exception):
    """A request answered with an error (Kafka's ApiException)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def new_member_id() -> str:
    """Kafka's Uuid.toString(): a random UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def heartbeat(ctx: Context, token: object, req: ConsumerHeartbeatInput) -> None:
    result: ConsumerHeartbeatResult | None
    try:
        _validate(ctx, req)
        if req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            result = _leave(ctx, req)
        else:
            result = _heartbeat(ctx, token, req)
    except HeartbeatError as exc:
        result = ConsumerHeartbeatResult(exc.code, exc.message)
    persist_if_changed(ctx, req.group_id)
    if result is not None:  # None: held for the next target assignment (coalesce.py)
        # It shows epochs and an assignment: given once the group's records are stored.
        ctx.reply_when_stored(req.group_id, token, result)


def persist_if_changed(ctx: Context, group_id: str) -> None:
    """At the end of a call that changed the group: its snapshot, and its new state if
    that changed (only then is the state computed: it looks at every member)."""
    g = ctx.consumer(group_id)
    if g is None or not g.changed:
        return
    durability.persist(ctx, g)
    state = g.state
    if state is not g.reported_state:
        ctx.event(events.StateChanged(group_id, g.reported_state.value, state.value))
        g.reported_state = state


# -- validation -------------------------------------------------------------------------------


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.INVALID_REQUEST, message)


#: What Java's String.trim() strips: a string of only these is empty to Kafka.
_JAVA_TRIMMED = "".join(map(chr, range(33)))


def _blank(value: str) -> bool:
    return not value.strip(_JAVA_TRIMMED)


def _validate(ctx: Context, req: ConsumerHeartbeatInput) -> None:
    epoch = req.member_epoch
    if _blank(req.member_id) and (
        req.api_version >= CLIENT_MEMBER_ID_VERSION or epoch > 0 or epoch < 0
    ):
        raise _invalid("MemberId can't be empty.")
    if _blank(req.group_id):
        raise _invalid("GroupId can't be empty.")
    if req.instance_id is not None and _blank(req.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if req.rack_id is not None and _blank(req.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or any(req.owned.values()):
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise _invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when"
                " (re-)joining."
            )
    elif epoch == LEAVE_STATIC_EPOCH:
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_STATIC_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    pattern = req.subscribed_topic_regex
    if pattern:  # "" clears the member's regex; the pattern is compiled off the loop
        limit = ctx.config.consumer.regex_max_bytes
        if pattern_bytes(pattern) > limit:
            raise _bad_regex(pattern, f"it is longer than {limit} bytes")
        group = ctx.consumer(req.group_id)
        if (reason := regex.refused(group, pattern, req.resolved)) is not None:
            raise _bad_regex(pattern, reason)
    if req.server_assignor is not None and req.server_assignor not in ASSIGNOR_NAMES:
        raise HeartbeatError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
            + ", ".join(ASSIGNOR_NAMES)
            + ".",
        )


def _bad_regex(pattern: str, reason: str) -> HeartbeatError:
    return HeartbeatError(
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        f"SubscribedTopicRegex `{regex.quoted(pattern)}` is not a valid regular expression:"
        f" {reason}.",
    )


# -- the group and the member -----------------------------------------------------------------


def _group(ctx: Context, group_id: str, create: bool) -> ConsumerGroup:
    existing = ctx.groups.get(group_id)
    if isinstance(existing, ConsumerGroup):
        return existing
    if isinstance(existing, ClassicGroup) and not _convertible(existing):
        migration = ctx.shard.migration
        assert migration is not None  # (the facade gives it)
        refusal = migration.upgrade_refusal(ctx, existing) if create else "not joining"
        if refusal is not None:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        return migration.to_consumer(ctx, existing)
    if not create:
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    if existing is None and ctx.at_group_limit(group_id):
        raise HeartbeatError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # An empty classic group becomes a consumer group (as Kafka replaces it); its offsets
    # are the offsets manager's, and stay.
    g = ctx.groups[group_id] = ConsumerGroup(group_id)
    return g


def _convertible(classic: ClassicGroup) -> bool:
    """An empty classic group simply becomes a consumer group (and back); one with members
    is converted with them (``../migration.py``)."""
    return classic.state is EMPTY and not classic.members and not classic.pending_join_members


def _member(ctx: Context, g: ConsumerGroup, req: ConsumerHeartbeatInput) -> ConsumerMember:
    joining = req.member_epoch == 0
    member_id = req.member_id or new_member_id()
    if req.instance_id is None:
        m = g.members.get(member_id)
        if m is None:
            if not joining:
                raise _unknown(member_id, g.group_id)
            check_room(ctx, g)
            return ConsumerMember(member_id)
        _check_epoch(m, req)
        return m
    owner = g.static_member(req.instance_id)
    if joining:
        if owner is None:
            m = g.members.get(member_id)
            if m is not None:  # a dynamic member rejoining as a static one
                _record_instance(g, m, req.instance_id)
                return m
            check_room(ctx, g)
            return ConsumerMember(member_id, instance_id=req.instance_id)
        if owner.member_epoch != LEAVE_STATIC_EPOCH and owner.classic is None:
            # Kafka: even under its own member id, the instance must be released first
            # (a classic member's instance is taken over, as Kafka does).
            raise HeartbeatError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {req.instance_id} cannot join"
                f" the group because the instance id is owned by {owner.member_id} member.",
            )
        return replace_static(ctx, g, owner, member_id)
    if owner is None:
        raise HeartbeatError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
        )
    if owner.member_id != member_id:
        raise HeartbeatError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {req.instance_id} was fenced by"
            f" member {owner.member_id}.",
        )
    _check_epoch(owner, req)
    return owner


def _record_instance(g: ConsumerGroup, m: ConsumerMember, instance_id: str) -> None:
    """Kafka's maybeUpdateInstanceId: the member is static from now on."""
    if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
        del g.static_members[m.instance_id]
    m.instance_id = instance_id
    g.static_members[instance_id] = m.member_id
    g.touch(m)


def _unknown(member_id: str, group_id: str) -> HeartbeatError:
    return HeartbeatError(
        ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
    )


def check_room(ctx: Context, g: ConsumerGroup) -> None:
    limit = ctx.config.consumer.max_size
    if len(g.members) >= limit:
        ctx.limit_reached(
            g.group_id, "group_consumer_max_size", limit, ErrorCode.GROUP_MAX_SIZE_REACHED
        )
        raise HeartbeatError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {limit} members.",
        )


def _check_epoch(m: ConsumerMember, req: ConsumerHeartbeatInput) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid. Epoch 0 is a rejoin (KAFKA-19233):
    the member keeps what it has. The previous epoch is accepted with a subset of the
    current assignment: the answer that moved the member on may have been lost."""
    received = req.member_epoch
    if received == 0 or received == m.member_epoch:
        return
    if received > m.member_epoch:
        raise _fenced(received, m.member_epoch, "greater")
    if received != m.previous_member_epoch or not _subset(req.owned, m.assigned):
        raise _fenced(received, m.member_epoch, "smaller")


def _fenced(received: int, known: int, which: str) -> HeartbeatError:
    return HeartbeatError(
        ErrorCode.FENCED_MEMBER_EPOCH,
        f"The consumer group member has a {which} member epoch ({received}) than the one"
        f" known by the group coordinator ({known}). The member must abandon all its"
        " partitions and rejoin.",
    )


def _subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(parts <= assigned.get(topic, frozenset()) for topic, parts in owned.items())


def replace_static(
    ctx: Context, g: ConsumerGroup, old: ConsumerMember, member_id: str
) -> ConsumerMember:
    """A static member back after leaving with epoch -2: a new member id takes over the
    instance, its assignment and its target, from epoch 0."""
    target = g.target.get(old.member_id, {})
    g.remove(old.member_id)
    sessions.cancel_timers(ctx, g.group_id, old.member_id)
    m = ConsumerMember(
        member_id,
        instance_id=old.instance_id,
        rack_id=old.rack_id,
        rebalance_timeout_ms=old.rebalance_timeout_ms,
        subscribed_topic_names=old.subscribed_topic_names,
        subscribed_topic_regex=old.subscribed_topic_regex,
        server_assignor=old.server_assignor,
        state=old.state,
        assigned=dict(old.assigned),
        assignment_epochs={t: dict(e) for t, e in old.assignment_epochs.items()},
    )
    g.target[member_id] = target
    g.add(m)
    return m


# -- the heartbeat ----------------------------------------------------------------------------


def _heartbeat(
    ctx: Context, token: object, req: ConsumerHeartbeatInput
) -> ConsumerHeartbeatResult | None:
    g = _group(ctx, req.group_id, create=req.member_epoch == 0)
    m = _member(ctx, g, req)
    is_new = m.member_id not in g.members
    before_assigned = dict(m.assigned)
    names = req.subscribed_topic_names
    new_names = m.subscribed_topic_names if names is None else tuple(names)
    pattern = req.subscribed_topic_regex
    new_regex = m.subscribed_topic_regex if pattern is None else (pattern or None)
    subscription_changed = (new_names, new_regex) != (
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
    )
    described = _described(m)
    if req.rack_id is not None:
        m.rack_id = req.rack_id
    if req.rebalance_timeout_ms != -1:
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        g.set_assignor(m, req.server_assignor)
    if req.resolved is not None:
        regex.apply(g, req.resolved, req.resolved_topics, new_regex, ctx.now)
    if subscription_changed or is_new:
        g.subscribe(m, new_names, new_regex)
        if not is_new:
            regex.prune(g)  # the pattern it left, if nobody else uses it
    m.client_id, m.client_host = req.client_id, req.client_host
    if described != _described(m):
        g.touch(m)
    if is_new:
        add_member(ctx, g, m, [m.server_assignor] if m.server_assignor else [])
    update_epoch(ctx, g, is_new, subscription_changed)
    sessions.schedule_session(ctx, g, m)
    full = req.member_epoch == 0 or (  # Kafka's isFullRequest: names or a regex
        req.rebalance_timeout_ms != -1
        and (names is not None or pattern is not None)
        and req.owned is not None
    )
    held = WaitingHeartbeat(token, m.member_id, req.owned, full, before_assigned)
    if coalesce.stale(g):
        coalesce.hold(ctx, g, held)
        return None
    return _finish(ctx, g, m, held)


def _finish(
    ctx: Context, g: ConsumerGroup, m: ConsumerMember, h: WaitingHeartbeat
) -> ConsumerHeartbeatResult:
    """The member's step towards the target, and its answer."""
    reconcile(ctx, g, m, h.owned)
    return ConsumerHeartbeatResult(
        ErrorCode.NONE,
        member_id=m.member_id,
        member_epoch=m.member_epoch,
        heartbeat_interval_ms=group_configs.heartbeat_interval_ms(ctx, g.group_id),
        assignment=dict(m.assigned) if h.full or m.assigned != h.before else None,
    )


def add_member(ctx: Context, g: ConsumerGroup, m: ConsumerMember, protocols: list[str]) -> None:
    """A new member is in: counted, its record written, and journaled with the assignor
    (or the classic protocols) it asked for."""
    g.add(m)
    ctx.event(
        events.MemberJoined(
            g.group_id, m.member_id, m.instance_id, m.client_id, m.client_host, protocols
        )
    )


def update_epoch(ctx: Context, g: ConsumerGroup, is_new: bool, subscription_changed: bool) -> None:
    """Bump the group epoch for a new member, a changed subscription or a change in the
    subscribed topics' partitions (the target follows: coalesce.py, or ``assign_now``)."""
    reason = (
        "a new member joined"
        if is_new
        else ("a member changed its subscription" if subscription_changed else None)
    )
    metadata = subscription_metadata(ctx, g)
    if metadata != g.subscription_metadata:
        g.subscription_metadata = metadata
        reason = reason or "the subscribed topics' partitions changed"
    if reason is not None:
        trigger = RebalanceTrigger.NEW_MEMBER if is_new else RebalanceTrigger.MEMBER_REJOINED
        _bump(ctx, g, reason, trigger)


def assign_now(ctx: Context, g: ConsumerGroup) -> None:
    """The target, computed now if the group epoch is ahead of it (a classic member's
    JoinGroup is answered from it at once)."""
    if coalesce.stale(g):
        _assign(ctx, g)


def _described(m: ConsumerMember) -> tuple[object, ...]:
    return (m.rack_id, m.rebalance_timeout_ms, m.server_assignor, m.client_id, m.client_host)


def subscription_metadata(ctx: Context, g: ConsumerGroup) -> dict[str, int]:
    counts = {}
    for topic in sorted(g.subscribed_topics()):
        partitions = ctx.shard.topic_partitions(topic)
        if partitions > 0:
            counts[topic] = partitions
    return counts


def _bump(ctx: Context, g: ConsumerGroup, reason: str, trigger: RebalanceTrigger) -> None:
    ctx.event(events.RebalanceStarted(g.group_id, g.group_epoch, reason, trigger))
    g.group_epoch += 1
    g.dirty = True


def _assign(ctx: Context, g: ConsumerGroup) -> None:
    assignor = g.preferred_assignor(DEFAULT_ASSIGNOR)
    changed = update_target(g, assignor)
    g.new_target_epoch(g.group_epoch)
    g.target_computed_ms = ctx.now
    g.dirty = True
    ctx.event(
        events.TargetAssignmentComputed(
            g.group_id, g.group_epoch, assignor, len(g.members), changed
        )
    )


def reconcile(ctx: Context, g: ConsumerGroup, m: ConsumerMember, owned: Partitions | None) -> None:
    if m.is_reconciled_to(g.assignment_epoch):
        return
    target = g.target.get(m.member_id, {})
    step = next_step(m, g.assignment_epoch, target, owned, g.partition_epoch)
    if step is None:
        return
    g.touch(m)
    g.release(m)
    m.set_assignment(step.assigned, step.pending_revocation, step.member_epoch)
    g.move(m, step.state, step.member_epoch)
    g.claim(m)
    if step.pending_revocation:
        sessions.arm_revocation_timer(ctx, g, m)
    else:
        ctx.cancel(consumer_rebalance_key(g.group_id, m.member_id))
    if m.is_reconciled_to(g.assignment_epoch):
        since = g.target_computed_ms
        took = None if since is None else max(ctx.now - since, 0)
        ctx.event(events.MemberReconciled(g.group_id, m.member_id, m.member_epoch, took))


# -- leaving ----------------------------------------------------------------------------------


def _leave(ctx: Context, req: ConsumerHeartbeatInput) -> ConsumerHeartbeatResult:
    g = ctx.consumer(req.group_id)
    if g is None:
        kind = "Group" if req.group_id in ctx.groups else "Consumer group"
        suffix = " is not a consumer group." if kind == "Group" else " not found."
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"{kind} {req.group_id}{suffix}")
    if req.instance_id is None:
        m = g.members.get(req.member_id)
        if m is None:
            raise _unknown(req.member_id, g.group_id)
    else:
        owner = g.static_member(req.instance_id)
        if owner is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
            )
        if owner.member_id != req.member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id {req.instance_id} was"
                f" fenced by member {owner.member_id}.",
            )
        m = owner
        if req.member_epoch == LEAVE_STATIC_EPOCH:
            # Gone for a while: it keeps its assignment (not its revocations) and comes back
            # within its session under a new member id.
            g.touch(m)
            g.release(m)
            g.move(m, m.state, LEAVE_STATIC_EPOCH)
            m.pending_revocation = {}
            g.claim(m)
            return ConsumerHeartbeatResult(
                ErrorCode.NONE, member_id=m.member_id, member_epoch=LEAVE_STATIC_EPOCH
            )
    fence(ctx, g, m, "the member left the group", RemovalCause.LEFT)
    return ConsumerHeartbeatResult(ErrorCode.NONE, member_id=m.member_id, member_epoch=LEAVE_EPOCH)


def fence(
    ctx: Context, g: ConsumerGroup, m: ConsumerMember, reason: str, cause: RemovalCause
) -> None:
    """Remove the member and bump the group epoch: the next heartbeat of any member
    computes a new target assignment without it."""
    g.remove(m.member_id)
    regex.prune(g)
    sessions.cancel_timers(ctx, g.group_id, m.member_id)
    ctx.event(events.MemberRemoved(g.group_id, m.member_id, m.instance_id, reason, cause))
    trigger = (
        RebalanceTrigger.MEMBER_LEFT
        if cause is RemovalCause.LEFT
        else (RebalanceTrigger.MEMBER_EXPIRED)
    )
    migration = ctx.shard.migration
    if m.classic is None and migration is not None and migration.downgrade_allowed(ctx, g):
        # At the epoch its classic members hold: they are told to rejoin, not fenced.
        migration.to_classic(ctx, g, f"the last consumer-protocol member: {reason}")
        return
    g.subscription_metadata = subscription_metadata(ctx, g)
    _bump(ctx, g, f"member {m.member_id} removed: {reason}", trigger)


# -- timers -----------------------------------------------------------------------------------


def timer_fired(ctx: Context, armed: Armed) -> None:
    g = ctx.consumer(armed.group_id)
    if g is not None and armed.kind is TimerKind.CONSUMER_ASSIGN:
        coalesce.fired(ctx, g, _assign, _finish)
        persist_if_changed(ctx, g.group_id)
        return
    m = None if g is None else g.members.get(armed.member_id)
    if g is None or m is None:
        return
    if armed.kind is TimerKind.CONSUMER_SESSION:
        fence(ctx, g, m, "its session expired", RemovalCause.SESSION_TIMEOUT)
    elif m.member_epoch == armed.generation_id:
        fence(
            ctx,
            g,
            m,
            f"it did not revoke its partitions within {m.rebalance_timeout_ms} ms",
            RemovalCause.REBALANCE_TIMEOUT,
        )
    persist_if_changed(ctx, g.group_id)


# -- unloading ------------------------------------------------------------------------------


def drop(ctx: Context, g: ConsumerGroup) -> None:
    """The group is no longer this node's (unloaded): its timers stop, and heartbeats
    waiting for its next target are told to find the coordinator again."""
    coalesce.release(ctx, g, ErrorCode.NOT_COORDINATOR)
    for member_id in g.members:
        sessions.cancel_timers(ctx, g.group_id, member_id)
