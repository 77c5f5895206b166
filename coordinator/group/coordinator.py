"""``GroupCoordinator``: the sans-IO classic group coordinator (spec 4).

Theory of operation. Each call takes the caller's monotonic clock reading ``now_ms`` and
returns ``Effects``: replies for request tokens, keyed timer changes, records to persist and
events to log. Nothing here reads a clock, sleeps or does I/O.

JoinGroup and SyncGroup may *park*: the member keeps the request's token and the reply
appears in the ``Effects`` of a later call - another member's request, a LeaveGroup, or a
timer the driver fires with ``fire_timer``. Every token is answered exactly once, in the
``Effects`` of some call (``shutdown`` answers whatever is still parked).

The driver must apply an ``Effects`` in this order: write ``records``, then send
``replies`` (a leader's SyncGroup and an OffsetCommit are acknowledged only once
persisted), and apply ``timers`` in list order (a later change to a key wins). When a
write completes it calls ``written(records, ok)``, in write order: answers that show a
generation, leader or assignment are held until the group's snapshot is stored, commits
become fetchable once stored, and a failed write rolls its group back (``durability.py``).

Timer keys are described in ``deadlines.py``. A firing is ignored unless the key is still
armed and due, and the handler re-checks the group's state and generation.

Persisted timestamps (offset commit times, last heartbeats, when a group became Empty) are
``now_ms`` readings: see ``records.py`` for what that asks of the driver's clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from protocol.errors import ErrorCode

from . import admin, durability, handover, inspection, lifecycle, migration, offsets
from .classic import join, membership, sync
from .classic.group import ClassicGroup
from .classic.rebalance import join_timer_fired, sync_timer_fired
from .config import GroupConfig
from .consumer import admin as consumer_admin
from .consumer import classic as consumer_classic
from .consumer import coalesce as consumer_coalesce
from .consumer import durability as consumer_durability
from .consumer import group_configs
from .consumer import heartbeat as consumer_heartbeat
from .consumer import regex as consumer_regex
from .consumer import steady as consumer_steady
from .consumer.group import ConsumerGroup
from .consumer.requests import ConsumerHeartbeatInput
from .context import Context, Shard, default_member_id, no_topics
from .deadlines import Armed, TimerKind
from .effects import Effects
from .handover import GroupHandover
from .inspection import GroupView
from .ledger import Ledger
from .model import Group
from .offsets import LaneShape
from .offsets_manager import OffsetsManager
from .records import GroupMetadataRecord, OffsetCommitRecord, Record
from .requests import (
    HeartbeatInput,
    JoinGroupInput,
    LeaveGroupInput,
    OffsetCommitInput,
    SyncGroupInput,
)
from .results import (
    DeleteGroupsResult,
    DescribedGroup,
    GroupStats,
    JoinGroupResult,
    ListedGroup,
    OffsetDeleteResult,
    OffsetFetchResult,
)

T = TypeVar("T")


class GroupCoordinator(Generic[T]):
    """Generic over the caller's request token ``T``: replies come back with it."""

    def __init__(
        self,
        config: GroupConfig,
        new_member_id: Callable[[str], str] | None = None,
        topic_partitions: Callable[[str], int] = no_topics,
        topic_names: Callable[[], list[str]] | None = None,
        topic_count: Callable[[], int] | None = None,
    ) -> None:
        """``new_member_id(prefix)`` makes member ids; the prefix is the client id of a
        dynamic member or the instance id of a static one. Ids must be unique.
        ``topic_partitions(name)`` is a topic's partition count (0: no such topic), which
        consumer groups' server-side assignments read; ``topic_names()`` every topic's name,
        which regex subscriptions match, and ``topic_count()`` how many there are (topics
        are only added: a change in the count is when regexes are matched again)."""
        self._shard = Shard(config, new_member_id or default_member_id)
        # The consumer group's heartbeat converts groups between the protocols through it.
        self._shard.migration = migration
        self._shard.topic_partitions = topic_partitions
        if topic_names is not None:  # regex subscriptions match these
            self._shard.topic_names = topic_names
            self._shard.topic_count = topic_count or (lambda: len(topic_names()))

    @property
    def config(self) -> GroupConfig:
        return self._shard.config

    @property
    def groups(self) -> Mapping[str, Group]:
        """The live groups of every kind, for inspection (tests, metrics). Do not mutate."""
        return self._shard.groups

    def heartbeat_tables(self) -> tuple[dict[str, Group], dict[str, Armed]]:
        """The groups and the armed timers by key, for the compiled heartbeat lane
        (``coordinator/fastlane``), which answers a heartbeat ``beat`` answers without error
        or with REBALANCE_IN_PROGRESS and moves its session in place as ``beat`` does."""
        return self._shard.groups, self._shard.deadlines.armed

    def consumer_heartbeat_tables(self) -> tuple[dict[str, Ledger], dict[str, dict[str, int]]]:
        """The groups' ledgers and their own configs, for the compiled heartbeat lane
        (``coordinator/fastlane``), which answers a ConsumerGroupHeartbeat ``steady.beat``
        answers with no timer change, reading them as ``beat`` does."""
        return self._shard.ledgers, self._shard.group_configs

    @property
    def offsets(self) -> OffsetsManager:
        """Every group's offsets, for inspection. Do not mutate."""
        return self._shard.offsets

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        g = self._shard.groups.get(group_id)
        return g if isinstance(g, ClassicGroup) else None

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        g = self._shard.groups.get(group_id)
        return g if isinstance(g, ConsumerGroup) else None

    def timer_deadline(self, key: str) -> int | None:
        """When ``key`` is armed to fire, or None."""
        return self._shard.deadlines.deadline(key)

    def group_view(self, group_id: str) -> GroupView | None:
        """The group as readers outside the core see it (the console), of any kind."""
        return inspection.group_view(self._shard, group_id)

    def _context(self, now_ms: int) -> Context:
        return Context(self._shard, now_ms)

    @staticmethod
    def _done(ctx: Context) -> Effects[T]:
        if ctx.after_call:
            durability.settle_call(ctx)
        return ctx.out

    # -- requests that may park ---------------------------------------------------------------

    def join_group(self, token: T, req: JoinGroupInput, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        consumer = ctx.consumer(req.group_id)
        if consumer is not None and consumer.members:
            if ctx.config.consumer.migration_enabled:
                # A classic member inside a consumer group (KIP-848's online migration).
                consumer_classic.join(ctx, consumer, token, req)
            else:
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
                ctx.reply(token, JoinGroupResult(error, member_id=req.member_id))
            return self._done(ctx)
        if consumer is not None:
            # An empty consumer group becomes a classic group; its offsets stay.
            del ctx.groups[req.group_id]
            consumer_durability.forget(ctx, req.group_id)
        join.join_group(ctx, token, req)
        return self._done(ctx)

    def sync_group(self, token: T, req: SyncGroupInput, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        consumer = ctx.consumer(req.group_id)
        if consumer is not None and req.group_id:
            consumer_classic.sync(ctx, consumer, token, req)
        else:
            sync.sync_group(ctx, token, req)
        return self._done(ctx)

    # -- requests answered at once ------------------------------------------------------------

    def heartbeat(self, token: T, req: HeartbeatInput, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        membership.heartbeat(ctx, token, req)
        return self._done(ctx)

    def heartbeat_now(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> tuple[int, str | None, int]:
        """``heartbeat`` without the Effects around it, for the heartbeat lane: (error
        code, the timer key to (re)arm or None, its deadline). A Heartbeat never persists,
        emits or parks anything, so this is the whole of it."""
        return membership.beat(
            self._shard, group_id, generation_id, member_id, group_instance_id, now_ms
        )

    def leave_group(self, token: T, req: LeaveGroupInput, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        consumer = ctx.consumer(req.group_id)
        if consumer is not None and req.group_id:
            consumer_classic.leave(ctx, consumer, token, req)
        else:
            membership.leave_group(ctx, token, req)
        return self._done(ctx)

    def commit_offsets(self, token: T, req: OffsetCommitInput, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        offsets.commit_offsets(ctx, token, req)
        return self._done(ctx)

    def commit_now(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        api_version: int,
        topics: LaneShape,
        committed: Sequence[int],
        now_ms: int,
    ) -> tuple[list[OffsetCommitRecord], str | None, int] | None:
        """``commit_offsets`` of a stable member, every partition taken, without the
        Effects around it, for the commit lane (``committed``: the partitions' offsets, in
        ``topics``' order): (the records, the session timer to (re)arm or None, its
        deadline); None for anything else (``offsets.commit_now``)."""
        return offsets.commit_now(
            self._shard,
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            retention_time_ms,
            api_version,
            topics,
            committed,
            now_ms,
        )

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        now_ms: int,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResult:
        """Stored offsets only; ``require_stable``: partitions with a commit in flight are
        UNSTABLE_OFFSET_COMMIT. A consumer group checks the member (OffsetFetch v9+)."""
        return offsets.fetch_offsets(
            self._shard, group_id, topics, require_stable, member_id, member_epoch
        )

    def describe_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        """Classic groups; a consumer group is not one (described as Dead, as unknown)."""
        return [admin.describe_group(self._shard, group_id) for group_id in group_ids]

    def list_groups(self, states_filter: list[str], types_filter: list[str]) -> list[ListedGroup]:
        return admin.list_groups(self._shard.groups.values(), states_filter, types_filter)

    def delete_groups(self, token: T, group_ids: list[str], now_ms: int) -> Effects[T]:
        """Answers ``token`` with a ``DeleteGroupsResult``."""
        ctx = self._context(now_ms)
        ctx.reply(token, DeleteGroupsResult(admin.delete_groups(ctx, group_ids)))
        return self._done(ctx)

    # -- KIP-848 consumer groups -------------------------------------------------------------

    def consumer_group_describe(
        self, group_ids: list[str]
    ) -> list[consumer_admin.DescribedConsumerGroup]:
        groups = self._shard.groups
        return [consumer_admin.describe(groups.get(g), g) for g in group_ids]

    def describe_group_configs(
        self, group_id: str, keys: list[str] | None
    ) -> list[group_configs.ConfigEntry]:
        """The group's own configs and the daemon's where it has none (DescribeConfigs)."""
        return group_configs.describe(self._context(0), group_id, keys)

    def alter_group_configs(
        self,
        token: T,
        groups: list[tuple[str, list[tuple[str, int, str | None]]]],
        validate_only: bool,
        now_ms: int,
    ) -> Effects[T]:
        """Apply each group's (name, operation, value) changes (IncrementalAlterConfigs).
        Answers ``token``, once the new configs are stored, with a list holding for each
        group None or the ``ConfigError`` that refused its changes."""
        ctx = self._context(now_ms)
        results = [
            group_configs.alter(ctx, group_id, changes, validate_only)
            for group_id, changes in groups
        ]
        ctx.reply(token, results)
        return self._done(ctx)

    def regex_resolved(self, group_id: str, pattern: str) -> bool:
        """Whether the group has resolved ``pattern`` (a member of it subscribes to it)."""
        g = self._shard.groups.get(group_id)
        return isinstance(g, ConsumerGroup) and pattern in g.resolved

    def regexes_to_resolve(self, group_id: str, pattern: str | None, now_ms: int) -> frozenset[str]:
        """The patterns to resolve (off the event loop) and hand in with a heartbeat of
        ``group_id`` subscribing to ``pattern``: ``ConsumerHeartbeatInput.resolved``."""
        shard = self._shard
        g = shard.groups.get(group_id)
        return consumer_regex.to_resolve(
            g if isinstance(g, ConsumerGroup) else None,
            pattern,
            shard.topic_count(),
            shard.config.consumer,
            now_ms,
        )

    def steady_consumer_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> consumer_steady.Steady | None:
        """The consumer heartbeat lane's call: a ConsumerGroupHeartbeat of a reconciled
        member sending nothing but its ids and epoch, answered as ``consumer_group_heartbeat``
        would (member epoch, heartbeat interval, a session timer to (re)arm or None, its
        deadline); None when that call must take it (``consumer/steady.py``)."""
        return consumer_steady.beat(
            self._shard,
            group_id,
            member_id,
            member_epoch,
            instance_id,
            client_id,
            client_host,
            now_ms,
        )

    def consumer_group_heartbeat(
        self, token: T, req: ConsumerHeartbeatInput, now_ms: int
    ) -> Effects[T]:
        """Answers ``token`` with a ``ConsumerHeartbeatResult``: at once, or when the
        group's next target assignment is computed (its ``consumer-assign`` timer)."""
        ctx = self._context(now_ms)
        consumer_heartbeat.heartbeat(ctx, token, req)
        return self._done(ctx)

    def delete_offsets(
        self, token: T, group_id: str, topics: list[tuple[str, list[int]]], now_ms: int
    ) -> Effects[T]:
        """Answers ``token`` with an ``OffsetDeleteResult``."""
        ctx = self._context(now_ms)
        error, partitions = offsets.delete_offsets(ctx, group_id, topics)
        ctx.reply(token, OffsetDeleteResult(error, partitions))
        return self._done(ctx)

    # -- time -------------------------------------------------------------------------------

    def fire_timer(self, key: str, now_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        armed = self._shard.deadlines.take_due(ctx.out, key, now_ms)
        if armed is None:
            return ctx.out  # cancelled, rescheduled later, or not due yet
        if armed.kind in (
            TimerKind.CONSUMER_SESSION,
            TimerKind.CONSUMER_REBALANCE,
            TimerKind.CONSUMER_ASSIGN,
        ):
            consumer_heartbeat.timer_fired(ctx, armed)
            return self._done(ctx)
        g = ctx.classic(armed.group_id)
        if g is None:
            return self._done(ctx)
        if armed.kind is TimerKind.HEARTBEAT:
            membership.heartbeat_timer_fired(ctx, g, armed.member_id)
        elif armed.kind is TimerKind.JOIN:
            join_timer_fired(ctx, g)
        else:
            sync_timer_fired(ctx, g, armed.generation_id)
        return self._done(ctx)

    def expire_offsets(self, now_ms: int, retention_ms: int) -> Effects[T]:
        ctx = self._context(now_ms)
        offsets.expire_offsets(ctx, retention_ms)
        return self._done(ctx)

    # -- the store -------------------------------------------------------------------------

    def written(self, records: Iterable[Record], ok: bool, now_ms: int) -> Effects[T]:
        """The driver stored ``records`` (one call's, or several calls' written together),
        or failed to. Call it in write order, for every write of records."""
        ctx = self._context(now_ms)
        durability.written(ctx, records, ok)
        return self._done(ctx)

    # -- lifecycle ---------------------------------------------------------------------------

    def load(
        self,
        records: Iterable[Record],
        now_ms: int,
        fresh_sessions: bool = False,
        handovers: Iterable[GroupHandover] = (),
        handover_max_age_ms: int = 0,
    ) -> Effects[T]:
        """Rebuild groups and offsets from stored records: at start, before any request; in
        a cluster, also for each coordinator partition this node acquires (then with
        ``fresh_sessions``: members get a whole session, as after a Kafka failover, unless
        the previous owner handed the group over alive: ``handovers``, handover.py)."""
        ctx = self._context(now_ms)
        by_group = {h.group_id: h for h in handovers}
        lifecycle.load(ctx, records, fresh_sessions, by_group, handover_max_age_ms)
        return self._done(ctx)

    def handover(
        self, belongs: Callable[[str], bool], now_ms: int
    ) -> list[tuple[GroupMetadataRecord | None, GroupHandover]]:
        """The groups for which ``belongs(group_id)`` as memory holds them: each classic
        group's snapshot (a consumer group's records are stored already) with what the
        next owner needs besides (handover.py), to be stored with the release of their
        coordinator partition, before ``unload``."""
        return handover.take(self._shard, belongs, now_ms)

    def unload(self, belongs: Callable[[str], bool], now_ms: int) -> Effects[T]:
        """Drop every group for which ``belongs(group_id)``: its coordinator partition moved
        to another node. Parked requests are answered NOT_COORDINATOR."""
        shard = self._shard
        known = {*shard.groups, *shard.offsets.groups(), *shard.ledgers}
        ctx = self._context(now_ms)
        durability.unload(ctx, sorted(g for g in known if belongs(g)))
        for group_id in [g for g in shard.group_configs if belongs(g)]:
            del shard.group_configs[group_id]
        return self._done(ctx)

    def renew_sessions(
        self, belongs: Callable[[str], bool], now_ms: int, ending_within_ms: int | None = None
    ) -> Effects[T]:
        """A whole session from now for every member of the groups for which
        ``belongs(group_id)`` (only those whose session ends within ``ending_within_ms``, if
        given): their coordinator is unreachable (a cluster node whose lease ran out), or
        was and is back, as if it loaded them anew."""
        ctx = self._context(now_ms)
        lifecycle.renew_sessions(ctx, belongs, ending_within_ms)
        return self._done(ctx)

    def checkpoint(self, now_ms: int) -> Effects[T]:
        """Records of the members' last heartbeats that moved since the last checkpoint, so
        a member restored after a crash keeps only what was left of its session."""
        ctx = self._context(now_ms)
        lifecycle.checkpoint(ctx)
        return self._done(ctx)

    def stats(self) -> GroupStats:
        return lifecycle.stats(self._shard.groups.values())

    def shutdown(self) -> Effects[T]:
        # No clock reading is passed to shutdown; state timestamps of Dead groups are moot.
        ctx = self._context(0)
        durability.fail_all_held(ctx)
        for g in self._shard.groups.values():
            if isinstance(g, ConsumerGroup):
                consumer_coalesce.release(ctx, g, ErrorCode.NOT_COORDINATOR)
        lifecycle.shutdown(ctx)
        return self._done(ctx)
