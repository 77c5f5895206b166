"""JoinGroup (spec 4.3, 4.4 validation order, 4.7 static members, 4.8 max size, 4.9 pending
members). A JoinGroup is either answered at once or parked on its member until the join
phase completes (``rebalance.complete_join``).
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from .. import events
from ..context import Context
from ..deadlines import heartbeat_key
from ..events import RebalanceTrigger, RemovalCause
from ..requests import JoinGroupInput
from ..results import JoinGroupResult, SyncGroupResult
from .group import ClassicGroup
from .member import Member
from .rebalance import (
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
    remove_member,
)
from .states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE

#: JoinGroup v4+ (KIP-394): a dynamic member must come back with a broker-assigned id.
REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
#: JoinGroup v9+ (KIP-814): a replaced static leader may skip the assignment.
SKIP_ASSIGNMENT_VERSION = 9


def join_group(ctx: Context, token: object, req: JoinGroupInput) -> None:
    if not req.group_id:
        ctx.reply(token, JoinGroupResult(ErrorCode.INVALID_GROUP_ID, member_id=req.member_id))
        return
    config = ctx.config
    if not config.min_session_timeout_ms <= req.session_timeout_ms <= config.max_session_timeout_ms:
        ctx.reply(
            token, JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id)
        )
        return
    if sum(len(meta) for _name, meta in req.protocols) > config.max_member_metadata_bytes:
        ctx.limit_reached(
            req.group_id,
            "group_max_member_metadata_bytes",
            config.max_member_metadata_bytes,
            ErrorCode.INVALID_REQUEST,
        )
        ctx.reply(token, JoinGroupResult(ErrorCode.INVALID_REQUEST, member_id=req.member_id))
        return
    g = ctx.classic(req.group_id)
    if g is None:
        if req.member_id:
            ctx.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
            return
        if ctx.at_group_limit(req.group_id):
            # Retriable for clients: they back off and look the coordinator up again.
            ctx.reply(token, JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        g = ctx.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=ctx.now)
        ctx.persist(g)  # as Kafka, which records every group it creates (still Empty here)
    if not _accepts_joining_member(ctx, g, req.member_id):
        # KIP-389: the member (or pending id) is forgotten, without a rebalance of its own.
        member = g.members.get(req.member_id)
        if member is not None:
            remove_member(ctx, g, member, "group max size reached", RemovalCause.GROUP_MAX_SIZE)
        elif req.member_id in g.pending_join_members:
            g.remove(req.member_id)
            ctx.cancel(heartbeat_key(g.group_id, req.member_id))
        ctx.limit_reached(
            g.group_id, "group_max_size", ctx.config.max_size, ErrorCode.GROUP_MAX_SIZE_REACHED
        )
        ctx.reply(token, JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
    elif not req.member_id:
        _join_new_member(ctx, g, token, req)
    else:
        _join_existing_member(ctx, g, token, req)


def _accepts_joining_member(ctx: Context, g: ClassicGroup, member_id: str) -> bool:
    """Spec 4.8 (KIP-389)."""
    limit = ctx.config.max_size
    if g.state in (EMPTY, DEAD):
        return True
    member = g.members.get(member_id)
    if g.state is PREPARING_REBALANCE:
        # Members that will not rejoin still count in `members`: count the parked instead.
        return (member is not None and member.join_token is not None) or (
            g.num_members_awaiting_join < limit
        )
    return member is not None or len(g.members) < limit


def _join_new_member(ctx: Context, g: ClassicGroup, token: object, req: JoinGroupInput) -> None:
    if g.state is DEAD:
        ctx.reply(token, JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    if not g.supports_protocols(req.protocol_type, req.protocols):
        ctx.reply(token, JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    instance = req.group_instance_id
    new_id = ctx.shard.new_member_id(req.client_id if instance is None else instance)
    if instance is not None:
        existing = g.static_members.get(instance)
        if existing is not None and g.state is EMPTY:
            # Impossible unless the state was forced (an Empty group has no members); Kafka
            # throws (-> UNKNOWN_SERVER_ERROR): testStaticMemberReJoinWithIllegalState...
            ctx.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_SERVER_ERROR))
        elif existing is not None:
            _replace_static_member(ctx, g, token, req, existing, new_id)
        else:
            _add_member_and_rebalance(ctx, g, token, req, new_id)
    elif req.api_version >= REQUIRES_KNOWN_MEMBER_ID_VERSION:
        # KIP-394: hand out an id; it becomes a member when it joins with it. Until then a
        # timer of the request's session timeout forgets it.
        if len(g.pending_join_members) >= ctx.config.max_pending_members:
            ctx.limit_reached(
                g.group_id,
                "group_max_pending_members",
                ctx.config.max_pending_members,
                ErrorCode.GROUP_MAX_SIZE_REACHED,
            )
            ctx.reply(token, JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
            return
        g.add_pending_member(new_id)
        if ctx.out.records:  # this call created the group: its answer waits for the write
            g.unannounced[new_id] = ctx.out.records[-1]
        deadline = ctx.now + req.session_timeout_ms
        key = heartbeat_key(g.group_id, new_id)
        ctx.deadlines.schedule_heartbeat(ctx.out, key, g.group_id, new_id, deadline)
        ctx.reply(token, JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
    else:
        _add_member_and_rebalance(ctx, g, token, req, new_id)


def _join_existing_member(
    ctx: Context, g: ClassicGroup, token: object, req: JoinGroupInput
) -> None:
    member_id = req.member_id
    if g.state is DEAD:
        ctx.reply(token, JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
        return
    if not g.supports_protocols(req.protocol_type, req.protocols):
        ctx.reply(
            token, JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        )
        return
    if member_id in g.pending_join_members:
        if req.group_instance_id is not None:
            # Pending ids are only handed to dynamic members; Kafka throws (-> -1).
            ctx.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_SERVER_ERROR))
            return
        _add_member_and_rebalance(ctx, g, token, req, member_id)
        return
    error = g.validate_member(member_id, req.group_instance_id)
    if error:
        ctx.reply(token, JoinGroupResult(error, member_id=member_id))
        return
    member = g.members[member_id]
    reason = f"member {member_id} rejoined in {g.state.value}" + _client_reason(req)
    if g.state is PREPARING_REBALANCE:
        _update_member_and_rebalance(ctx, g, member, token, req, reason)
    elif g.state is COMPLETING_REBALANCE:
        if member.matches(req.protocols):
            # It probably missed the JoinGroup response: repeat it for this generation.
            ctx.reply_when_stored(
                g.group_id, token, _current_generation(g, member_id, with_members=True)
            )
        else:
            _update_member_and_rebalance(ctx, g, member, token, req, reason)
    elif g.state is STABLE:
        # A leader's JoinGroup always rebalances: that is how it asks for a new assignment
        # (e.g. after topic metadata changed).
        if g.is_leader(member_id) or not member.matches(req.protocols):
            _update_member_and_rebalance(ctx, g, member, token, req, reason)
        else:
            ctx.reply_when_stored(
                g.group_id, token, _current_generation(g, member_id, with_members=False)
            )
    else:  # Empty: unreachable after validate_member (an Empty group has no members)
        ctx.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))


def _current_generation(g: ClassicGroup, member_id: str, with_members: bool) -> JoinGroupResult:
    return JoinGroupResult(
        error_code=0,
        generation_id=g.generation_id,
        protocol_type=g.protocol_type,
        protocol_name=g.protocol_name,
        leader=g.leader_id or "",
        member_id=member_id,
        members=g.current_members_list() if with_members and g.is_leader(member_id) else [],
    )


def _client_reason(req: JoinGroupInput) -> str:
    return f" (client reason: {req.reason})" if req.reason else ""


def _update_member_and_rebalance(
    ctx: Context,
    g: ClassicGroup,
    member: Member,
    token: object,
    req: JoinGroupInput,
    reason: str,
) -> None:
    superseded = g.update_member(
        member, list(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms, token
    )
    if superseded is not None:
        # A second JoinGroup from the same member (a retry on another connection): Kafka
        # drops the first silently; we answer it so no request hangs.
        ctx.reply(
            superseded,
            JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id),
        )
    maybe_prepare_rebalance_or_complete_join(ctx, g, reason, RebalanceTrigger.MEMBER_REJOINED)


def _add_member_and_rebalance(
    ctx: Context, g: ClassicGroup, token: object, req: JoinGroupInput, member_id: str
) -> None:
    member = g.new_member(
        member_id,
        req.group_instance_id,
        req.client_id,
        req.client_host,
        req.rebalance_timeout_ms,
        req.session_timeout_ms,
        req.protocol_type,
        list(req.protocols),
    )
    member.is_new = True
    member.id_untold = not req.member_id and req.group_instance_id is None
    if g.state is PREPARING_REBALANCE and g.previous_state is EMPTY:
        g.new_member_added = True  # extends the initial delay (spec 4.5)
    g.add(member, token)
    ctx.event(
        events.MemberJoined(
            g.group_id,
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            [name for name, _ in req.protocols],
        )
    )
    # A new member cannot heartbeat while its JoinGroup is parked and sockets that drop
    # are not noticed: a fixed join timeout instead of its session (spec 4.10).
    ctx.restart_session(g, member, ctx.config.new_member_join_timeout_ms)
    reason = f"adding new member {member_id}" + _client_reason(req)
    maybe_prepare_rebalance_or_complete_join(ctx, g, reason, RebalanceTrigger.NEW_MEMBER)


def _replace_static_member(
    ctx: Context,
    g: ClassicGroup,
    token: object,
    req: JoinGroupInput,
    old_id: str,
    new_id: str,
) -> None:
    """A known instance id joins with MemberId "" (spec 4.7): the new id takes over the
    member record; the old id's parked requests are fenced."""
    instance = req.group_instance_id
    assert instance is not None
    leader_before = g.leader_id
    ctx.cancel(g.members[old_id].heartbeat_key)
    member, old_join, old_sync = g.replace_static_member(instance, old_id, new_id)
    if old_join is not None:
        ctx.reply(old_join, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
    if old_sync is not None:
        ctx.reply(old_sync, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
    # Kafka restarts the session with the timeout it had before the update below.
    ctx.restart_session(g, member)
    g.update_member(
        member, list(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms, token
    )
    ctx.event(events.StaticMemberReplaced(g.group_id, instance, old_id, new_id))
    reason = f"static member {instance} rejoined as {new_id}" + _client_reason(req)
    if g.state is STABLE:
        if (g.protocol_name or "") != g.select_protocol():
            maybe_prepare_rebalance_or_complete_join(
                ctx, g, reason + " with another protocol", RebalanceTrigger.STATIC_MEMBER_REPLACED
            )
            return
        # Same protocol: no rebalance. Persist the new id and answer at once.
        ctx.persist(g)
        parked = g.take_join(member)
        if req.api_version >= SKIP_ASSIGNMENT_VERSION:
            is_leader = g.is_leader(new_id)
            result = JoinGroupResult(
                error_code=0,
                generation_id=g.generation_id,
                protocol_type=g.protocol_type,
                protocol_name=g.protocol_name,
                leader=g.leader_id or "",
                member_id=new_id,
                skip_assignment=is_leader,
                members=g.current_members_list() if is_leader else [],
            )
        else:
            # v5-8 cannot skip the assignment: name the old leader id so that a returning
            # leader does not think it must assign again (KIP-814).
            result = JoinGroupResult(
                error_code=0,
                generation_id=g.generation_id,
                protocol_type=g.protocol_type,
                protocol_name=g.protocol_name,
                leader=leader_before or "",
                member_id=new_id,
            )
        ctx.reply_when_stored(g.group_id, parked, result)
    elif g.state is COMPLETING_REBALANCE:
        # The leader may already be assigning to the old id: start over.
        prepare_rebalance(ctx, g, reason, RebalanceTrigger.STATIC_MEMBER_REPLACED)
    else:
        maybe_complete_join_phase(ctx, g)
