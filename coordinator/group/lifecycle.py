"""Loading groups from persisted records and unloading them (spec 4.12).

Load: every stored record replays into what the store holds of its group (records.py),
then each group is built from that: a consumer group (consumer/durability.py) if the store
holds one, else a classic group from its latest snapshot. A classic group with members
comes back Stable, each member's session timer restarted from its persisted last heartbeat
(so it gets only what was left of its session); a group saved mid-rebalance, or over
``group.max.size``, is rebalanced at once. Groups without members come back Empty, as do
groups known only by their offsets (simple groups).

Unload (``shutdown``): every group becomes Dead and every parked JoinGroup/SyncGroup is
answered NOT_COORDINATOR, as Kafka does when a coordinator partition moves away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from protocol.errors import ErrorCode

from . import events, handover
from .classic.group import ClassicGroup
from .classic.rebalance import prepare_rebalance
from .classic.states import DEAD, STABLE, GroupState
from .classic.subscriptions import subscribed_topics
from .consumer import durability as consumer_durability
from .consumer import group_configs
from .consumer import sessions as consumer_sessions
from .consumer.group import ConsumerGroup, ConsumerGroupState
from .context import Context
from .deadlines import consumer_session_key
from .events import RebalanceTrigger
from .model import Group
from .records import GroupMetadataRecord, HeartbeatRecord, Record, StoredGroup
from .results import GroupStats, JoinGroupResult, SyncGroupResult


def load(
    ctx: Context,
    records: Iterable[Record],
    fresh_sessions: bool = False,
    handovers: Mapping[str, handover.GroupHandover] | None = None,
    handover_max_age_ms: int = 0,
) -> None:
    """Add the groups ``records`` describe (at start: all of them; in a cluster: those of
    a coordinator partition this node acquired): each record replays into what the store
    holds of its group (records.py) and the offsets; then each group is built from that.
    ``fresh_sessions``: every member gets a whole session from now, as Kafka's
    coordinator grants on load (a failover must not expire members that were heartbeating
    the previous owner). ``handovers``: what the previous owner handed over with the
    groups it gave up alive (handover.py); a group's members then get what was left of
    their sessions, its pending member ids are known."""
    stored: dict[str, StoredGroup] = {}
    manager = ctx.shard.offsets
    for record in records:
        group = stored.get(record.group_id)
        if group is None:
            group = stored[record.group_id] = StoredGroup()
        record.replay(group, manager)
    for group_id, group in stored.items():
        group_configs.restore(ctx, group_id, group.configs)
        if group:
            ctx.ledger(group_id).stored = group
        handed = (handovers or {}).get(group_id)
        if group.consumer is not None:
            # A group converted from classic keeps its old classic snapshot in the store
            # (its offsets are shared): the consumer group's records are the newer ones.
            consumer = consumer_durability.restore(ctx, group.consumer, group.members.values())
            if handed is not None:
                handover.restore_consumer_sessions(ctx, consumer, handed, handover_max_age_ms)
            ctx.groups[group_id] = consumer
            ctx.event(
                events.GroupLoaded(
                    group_id, consumer.state.value, len(consumer.members), manager.count(group_id)
                )
            )
        elif group.snapshot is not None or manager.has_any(group_id):
            _load_classic(ctx, group_id, group, fresh_sessions, handed, handover_max_age_ms)


def _load_classic(
    ctx: Context,
    group_id: str,
    stored: StoredGroup,
    fresh_sessions: bool,
    handed: handover.GroupHandover | None,
    handover_max_age_ms: int,
) -> None:
    g = ClassicGroup(group_id)
    snapshot = stored.snapshot
    if snapshot is not None:
        lasts = (
            None
            if handed is None
            else handover.last_heartbeats(handed, snapshot, ctx.now, handover_max_age_ms)
        )
        heartbeats = stored.heartbeats
        if fresh_sessions:
            heartbeats = {m.member_id: ctx.now for m in snapshot.members}
        _restore(ctx, g, snapshot, heartbeats, lasts)
        if handed is not None and lasts is not None:
            handover.restore_pending(ctx, g, handed, handover_max_age_ms)
    ctx.groups[group_id] = g
    offset_count = ctx.shard.offsets.count(group_id)
    ctx.event(events.GroupLoaded(group_id, g.state.value, len(g.members), offset_count))
    if snapshot is not None:
        _rebalance_if_needed(ctx, g, snapshot, "loaded", RebalanceTrigger.LOADED)
        # What was loaded is what is persisted: the first checkpoint writes only what moves.
        ctx.ledger(group_id).checkpointed = {
            m.member_id: m.last_heartbeat_ms for m in g.members.values()
        }


def restore(
    ctx: Context,
    g: ClassicGroup,
    snapshot: GroupMetadataRecord,
    heartbeats: dict[str, int],
) -> None:
    """Rebuild ``g`` as ``snapshot`` stored it after a failed write (durability.py): a
    snapshot taken mid-rebalance starts a rebalance, as a load does."""
    _restore(ctx, g, snapshot, heartbeats)
    _rebalance_if_needed(ctx, g, snapshot, "rolled back", RebalanceTrigger.WRITE_FAILED)


def _rebalance_if_needed(
    ctx: Context,
    g: ClassicGroup,
    snapshot: GroupMetadataRecord,
    how: str,
    trigger: RebalanceTrigger,
) -> None:
    if not g.members:
        return
    if snapshot.state != STABLE.value:
        prepare_rebalance(ctx, g, f"{how} in {snapshot.state}", trigger)
    elif len(g.members) > ctx.config.max_size:
        # testOnLoadedExceedGroupMaxSizeTriggersRebalance: the limit may have shrunk.
        prepare_rebalance(ctx, g, f"{how} over group.max.size", trigger)


def _restore(
    ctx: Context,
    g: ClassicGroup,
    snapshot: GroupMetadataRecord,
    heartbeats: dict[str, int],
    lasts: Mapping[str, int] | None = None,
) -> None:
    """``heartbeats``: member id -> its last heartbeat checkpointed since the snapshot;
    ``lasts``: as a hand-over gives it (taken as it is)."""
    g.protocol_type = snapshot.protocol_type
    g.generation_id = snapshot.generation_id
    g.state_timestamp_ms = snapshot.state_timestamp_ms
    for mr in snapshot.members:
        m = g.new_member(
            mr.member_id,
            mr.group_instance_id,
            mr.client_id,
            mr.client_host,
            mr.rebalance_timeout_ms,
            mr.session_timeout_ms,
            mr.protocol_type,
            list(mr.protocols),
        )
        m.assignment = mr.assignment
        g.add(m)
        # Only what is left of the session; a timestamp from the future counts as now.
        if lasts is not None:
            last = lasts[mr.member_id]
        else:
            checkpointed = heartbeats.get(mr.member_id, 0)
            last = min(max(mr.last_heartbeat_ms, checkpointed), ctx.now)
        ctx.deadlines.schedule_heartbeat(
            ctx.out, m.heartbeat_key, g.group_id, m.member_id, last + m.session_timeout_ms
        )
        m.last_heartbeat_ms = last
    if not g.members:
        g.subscribed_topics = subscribed_topics(g)
        return  # Empty, with its protocol type and generation
    if snapshot.leader_id in g.members:
        g.leader_id = snapshot.leader_id
    g.protocol_name = snapshot.protocol_name or g.select_protocol()
    g.subscribed_topics = subscribed_topics(g)
    # Loaded groups with members are Stable (Kafka's GroupMetadataValue replay): this is
    # how the group object starts, not a transition.
    g.state = g.previous_state = STABLE


def renew_sessions(
    ctx: Context, belongs: Callable[[str], bool], ending_within_ms: int | None = None
) -> None:
    """Every member of the groups for which ``belongs(group_id)`` gets a whole session from
    now, as on a load: their coordinator could not be reached (a cluster node whose lease
    had run out refuses every request) and is back, or is not back yet and must not expire
    anyone meanwhile. ``ending_within_ms``: only the sessions that end that soon. A member
    waiting for a JoinGroup or SyncGroup answer counts as alive already."""
    horizon = None if ending_within_ms is None else ctx.now + ending_within_ms
    deadline = ctx.deadlines.deadline
    for group_id, g in ctx.groups.items():
        if not belongs(group_id):
            continue
        if isinstance(g, ClassicGroup):
            if g.state is DEAD:
                continue
            for m in g.members.values():
                if m.join_token is not None or m.sync_token is not None:
                    continue
                ends = deadline(m.heartbeat_key)
                if horizon is None or (ends is not None and ends <= horizon):
                    ctx.restart_session(g, m)
        elif isinstance(g, ConsumerGroup):
            for cm in g.members.values():
                ends = deadline(consumer_session_key(group_id, cm.member_id))
                if horizon is None or (ends is not None and ends <= horizon):
                    consumer_sessions.schedule_session(ctx, g, cm)


def checkpoint(ctx: Context) -> None:
    """Records of the members' last heartbeats that moved since the last checkpoint."""
    ledgers = ctx.shard.ledgers
    for g in ctx.groups.values():
        if not isinstance(g, ClassicGroup):
            continue  # a consumer member's session restarts whole on load, as in Kafka
        ledger = ledgers.get(g.group_id)
        if ledger is None:
            if not g.members:
                continue
            ledger = ctx.ledger(g.group_id)
        previous = ledger.checkpointed
        seen: dict[str, int] = {}
        for m in g.members.values():
            seen[m.member_id] = m.last_heartbeat_ms
            if previous.get(m.member_id) != m.last_heartbeat_ms:
                ctx.out.records.append(
                    HeartbeatRecord(g.group_id, m.member_id, m.last_heartbeat_ms)
                )
        ledger.checkpointed = seen


def stats(groups: Iterable[Group]) -> GroupStats:
    """Groups and members by kind (a consumer group's revoking members too)."""
    by_state = {s.value: 0 for s in GroupState}
    consumer_by_state = {s.value: 0 for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD}
    members = consumer_members = revoking = 0
    for g in groups:
        if isinstance(g, ClassicGroup):
            by_state[g.state.value] += 1
            members += len(g.members)
        elif isinstance(g, ConsumerGroup):
            consumer_by_state[g.state.value] += 1
            consumer_members += len(g.members)
            revoking += sum(1 for m in g.members.values() if m.pending_revocation)
    return GroupStats(by_state, members, consumer_by_state, consumer_members, revoking)


def shutdown(ctx: Context) -> None:
    for g in ctx.groups.values():
        if not isinstance(g, ClassicGroup):
            continue  # nothing of a consumer group's is parked
        for m in g.members.values():
            token = g.take_join(m)
            if token is not None:
                ctx.reply(token, JoinGroupResult(ErrorCode.NOT_COORDINATOR, member_id=m.member_id))
            if m.sync_token is not None:
                ctx.reply(m.sync_token, SyncGroupResult(ErrorCode.NOT_COORDINATOR))
                m.sync_token = None
        ctx.transition(g, DEAD)
    ctx.deadlines.cancel_all(ctx.out)
