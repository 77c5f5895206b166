"""Deliberately broken behaviours, applied with pytest's monkeypatch to an in-process
daemon. Each conformance scenario names the faults that must make it fail; the test next
to this module checks that they do. Nothing here can reach production code paths: the
patches exist only for the duration of one test."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from coordinator import connection, server
from coordinator.catalog import Catalog
from coordinator.cluster.routing import ClusterRouting
from coordinator.group import admin, coordinator, join, membership, offsets, rebalance, sync
from coordinator.group.consumer import heartbeat as consumer_heartbeat
from coordinator.group.consumer import regex as consumer_regex
from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.context import Context, Shard
from coordinator.group.events import RemovalCause
from coordinator.group.group import ClassicGroup
from coordinator.group.member import Member
from coordinator.group.requests import HeartbeatInput
from coordinator.group.results import OffsetFetchResult, SyncGroupResult, TopicOffsets
from coordinator.group.states import COMPLETING_REBALANCE
from coordinator.handlers import cluster as handlers_cluster
from protocol.errors import ErrorCode

Fault = Callable[[pytest.MonkeyPatch], None]
FAULTS: dict[str, Fault] = {}

UNKNOWN = ErrorCode.UNKNOWN_MEMBER_ID
REBALANCING = ErrorCode.REBALANCE_IN_PROGRESS


def fault(fn: Fault) -> Fault:
    FAULTS[fn.__name__] = fn
    return fn


def _map_result(mp: pytest.MonkeyPatch, module: Any, name: str, f: Callable[..., Any]) -> None:
    """Replace module.name by a wrapper that passes (args, result) through ``f``."""
    original = getattr(module, name)

    def wrapper(*args: Any) -> Any:
        return f(args, original(*args))

    mp.setattr(module, name, wrapper)


def _map_request(mp: pytest.MonkeyPatch, module: Any, name: str, f: Callable[..., Any]) -> None:
    """Replace module.name(ctx, ..., req) by one that rewrites the request first."""
    original = getattr(module, name)

    def wrapper(*args: Any) -> Any:
        *rest, req = args
        return original(*rest, f(rest[0], req))

    mp.setattr(module, name, wrapper)


def _map_beat_result(mp: pytest.MonkeyPatch, f: Callable[..., int]) -> None:
    """Pass the heartbeat's error code through ``f((shard, request), code)``: the one
    heartbeat implementation (``membership.beat``), which the request path and the
    heartbeat lane share."""
    original = membership.beat

    def beat(shard: Shard, group: str, gen: int, member: str, inst: str | None, now: int) -> Any:
        error, key, deadline = original(shard, group, gen, member, inst, now)
        return f((shard, HeartbeatInput(group, gen, member, inst)), error), key, deadline

    mp.setattr(membership, "beat", beat)


def _map_beat_request(mp: pytest.MonkeyPatch, f: Callable[..., HeartbeatInput]) -> None:
    """Rewrite a heartbeat with ``f(shard, request)`` before ``membership.beat`` reads it."""
    original = membership.beat

    def beat(shard: Shard, group: str, gen: int, member: str, inst: str | None, now: int) -> Any:
        req = f(shard, HeartbeatInput(group, gen, member, inst))
        return original(
            shard, req.group_id, req.generation_id, req.member_id, req.group_instance_id, now
        )

    mp.setattr(membership, "beat", beat)


# -- wire layer ------------------------------------------------------------------------------


@fault
def api_versions_no_fallback(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(
        connection, "_unsupported_api_versions", lambda _frame: connection.Refuse("no fallback")
    )


@fault
def unsupported_request_kept_open(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(server.KafkaConnection, "_refuse", lambda self, _reason: None)


# -- JoinGroup -------------------------------------------------------------------------------


@fault
def no_member_id_required(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(join, "REQUIRES_KNOWN_MEMBER_ID_VERSION", 10**6)


@fault
def unknown_member_joins_new_group(mp: pytest.MonkeyPatch) -> None:
    def forget_id(ctx: Context, req: Any) -> Any:
        if req.group_id not in ctx.groups:
            return dataclasses.replace(req, member_id="")
        return req

    _map_request(mp, join, "join_group", forget_id)


@fault
def latest_joiner_leads(mp: pytest.MonkeyPatch) -> None:
    original = ClassicGroup.add

    def add(self: ClassicGroup, member: Member, join_token: object | None = None) -> None:
        original(self, member, join_token)
        self.leader_id = member.member_id

    mp.setattr(ClassicGroup, "add", add)


@fault
def no_leader_reelection(mp: pytest.MonkeyPatch) -> None:
    original = ClassicGroup.remove

    def remove(self: ClassicGroup, member_id: str) -> Member | None:
        leader = self.leader_id
        removed = original(self, member_id)
        self.leader_id = leader  # a departed leader stays "leader"
        return removed

    mp.setattr(ClassicGroup, "remove", remove)


@fault
def no_rebalance_on_join(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(
        join,
        "maybe_prepare_rebalance_or_complete_join",
        lambda ctx, g, _reason, _trigger: rebalance.maybe_complete_join_phase(ctx, g),
    )


@fault
def generation_not_incremented(mp: pytest.MonkeyPatch) -> None:
    original = rebalance.complete_join

    def complete_join(ctx: Context, g: ClassicGroup) -> None:
        before = g.generation_id
        g.generation_id -= 1  # cancels the increment inside
        original(ctx, g)
        if g.generation_id == before - 1:  # it returned early: nothing to cancel
            g.generation_id = before

    mp.setattr(rebalance, "complete_join", complete_join)
    mp.setattr(membership, "complete_join", complete_join)


@fault
def ignore_protocol_mismatch(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(ClassicGroup, "supports_protocols", lambda self, _type, _names: True)


@fault
def leader_protocol_wins(mp: pytest.MonkeyPatch) -> None:
    def select(self: ClassicGroup) -> str | None:
        leader = self.members.get(self.leader_id or "")
        return leader.protocols[0][0] if leader and leader.protocols else None

    mp.setattr(ClassicGroup, "select_protocol", select)


@fault
def no_session_timeout_check(mp: pytest.MonkeyPatch) -> None:
    def clamp(ctx: Context, req: Any) -> Any:
        low, high = ctx.config.min_session_timeout_ms, ctx.config.max_session_timeout_ms
        return dataclasses.replace(
            req, session_timeout_ms=min(max(req.session_timeout_ms, low), high)
        )

    _map_request(mp, join, "join_group", clamp)


@fault
def rebalance_on_unchanged_rejoin(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Member, "matches", lambda self, _protocols: False)


@fault
def ignore_metadata_change(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Member, "matches", lambda self, _protocols: True)


# -- SyncGroup -------------------------------------------------------------------------------


@fault
def drop_assignments(mp: pytest.MonkeyPatch) -> None:
    original = sync._store_assignment
    mp.setattr(sync, "_store_assignment", lambda ctx, g, _assignments: original(ctx, g, []))


@fault
def sync_answers_without_waiting(mp: pytest.MonkeyPatch) -> None:
    original = sync.sync_group

    def sync_group(ctx: Context, token: object, req: Any) -> None:
        g = ctx.groups.get(req.group_id)
        if (
            g is not None
            and g.state is COMPLETING_REBALANCE
            and req.member_id in g.members
            and not g.is_leader(req.member_id)
        ):
            ctx.reply(token, SyncGroupResult(ErrorCode.NONE, g.protocol_type, g.protocol_name, b""))
            return
        original(ctx, token, req)

    mp.setattr(sync, "sync_group", sync_group)


@fault
def sync_skips_protocol_check(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(sync, "_inconsistent", lambda _given, _expected: False)


@fault
def no_sync_timeout(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(coordinator, "sync_timer_fired", lambda ctx, g, generation: None)


# -- member and generation checks (Heartbeat, SyncGroup, LeaveGroup, OffsetCommit) ----------


@fault
def unknown_member_answered_ok(mp: pytest.MonkeyPatch) -> None:
    def ok(code: int) -> int:
        return 0 if code == UNKNOWN else code

    _map_beat_result(mp, lambda _a, code: ok(code))
    _map_result(mp, sync, "_validate", lambda _a, code: ok(code))
    _map_result(mp, offsets, "_validate_commit", lambda _a, code: ok(code))
    _map_result(mp, membership, "_leave_one", lambda _a, r: (r[0], r[1], ok(r[2])))


@fault
def skip_generation_check(mp: pytest.MonkeyPatch) -> None:
    def current(ctx: Context, req: Any) -> Any:
        g = ctx.groups.get(req.group_id)
        if g is None or req.generation_id < 0:
            return req
        return dataclasses.replace(req, generation_id=g.generation_id)

    _map_beat_request(mp, current)
    _map_request(mp, sync, "_validate", current)
    _map_request(mp, offsets, "_validate_commit", current)


@fault
def heartbeat_ignores_rebalance(mp: pytest.MonkeyPatch) -> None:
    _map_beat_result(mp, lambda _a, code: 0 if code == REBALANCING else code)


@fault
def heartbeat_rejects_completing_rebalance(mp: pytest.MonkeyPatch) -> None:
    def strict(args: tuple[Any, ...], code: int) -> int:
        ctx, req = args
        g = ctx.groups.get(req.group_id)
        if code == 0 and g is not None and g.state is COMPLETING_REBALANCE:
            return REBALANCING
        return code

    _map_beat_result(mp, strict)


@fault
def commit_ignores_rebalance(mp: pytest.MonkeyPatch) -> None:
    _map_result(mp, offsets, "_validate_commit", lambda _a, c: 0 if c == REBALANCING else c)


# -- liveness --------------------------------------------------------------------------------


@fault
def no_session_expiry(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(membership, "heartbeat_timer_fired", lambda ctx, g, member_id: None)


@fault
def heartbeat_does_not_refresh_session(mp: pytest.MonkeyPatch) -> None:
    original = membership.beat

    def beat(shard: Shard, group: str, gen: int, member: str, inst: str | None, now: int) -> Any:
        g = shard.groups.get(group)
        m = g.members.get(member) if g is not None else None
        if m is None:
            return original(shard, group, gen, member, inst, now)
        last, deadline = m.last_heartbeat_ms, shard.deadlines.deadline(m.heartbeat_key)
        error, _key, _deadline = original(shard, group, gen, member, inst, now)
        m.last_heartbeat_ms = last  # as if the session had not been touched
        if deadline is not None:
            shard.deadlines.move_heartbeat(m.heartbeat_key, group, member, deadline)
        return error, None, 0

    mp.setattr(membership, "beat", beat)


@fault
def no_rebalance_timeout(mp: pytest.MonkeyPatch) -> None:
    original = coordinator.join_timer_fired  # type: ignore[attr-defined]

    def join_timer_fired(ctx: Context, g: ClassicGroup) -> None:
        if g.join_timer_is_initial:  # only the initial delay still works
            original(ctx, g)

    mp.setattr(coordinator, "join_timer_fired", join_timer_fired)


# -- static membership -----------------------------------------------------------------------


@fault
def static_member_id_required(mp: pytest.MonkeyPatch) -> None:
    def dynamic(ctx: Context, req: Any) -> Any:
        g = ctx.groups.get(req.group_id)
        known = g is not None and req.group_instance_id in g.static_members
        if req.group_instance_id is not None and not known:
            return dataclasses.replace(req, group_instance_id=None)
        return req

    _map_request(mp, join, "_join_new_member", dynamic)


@fault
def static_replacement_rebalances(mp: pytest.MonkeyPatch) -> None:
    def replace(ctx: Context, g: ClassicGroup, token: object, req: Any, old: str, new: str) -> None:
        rebalance.remove_member(ctx, g, g.members[old], "replaced", RemovalCause.LEFT)
        join._add_member_and_rebalance(ctx, g, token, req, new)

    mp.setattr(join, "_replace_static_member", replace)


@fault
def no_instance_fencing(mp: pytest.MonkeyPatch) -> None:
    original = ClassicGroup.validate_member

    def validate(self: ClassicGroup, member_id: str, instance: str | None) -> int:
        code = original(self, member_id, instance)
        return UNKNOWN if code == ErrorCode.FENCED_INSTANCE_ID else code

    mp.setattr(ClassicGroup, "validate_member", validate)


@fault
def skip_assignment_ignored(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(join, "SKIP_ASSIGNMENT_VERSION", 10**6)


@fault
def static_members_dropped_at_completion(mp: pytest.MonkeyPatch) -> None:
    original = rebalance.complete_join

    def complete_join(ctx: Context, g: ClassicGroup) -> None:
        for m in list(g.members.values()):
            if m.join_token is None and m.group_instance_id is not None:
                rebalance.remove_member(ctx, g, m, "did not rejoin", RemovalCause.REBALANCE_TIMEOUT)
        original(ctx, g)

    mp.setattr(rebalance, "complete_join", complete_join)
    mp.setattr(membership, "complete_join", complete_join)


# -- LeaveGroup ------------------------------------------------------------------------------


@fault
def leave_by_instance_ignored(mp: pytest.MonkeyPatch) -> None:
    original = membership._leave_one

    def leave_one(ctx: Context, g: ClassicGroup, member_id: str, instance: Any, reason: Any) -> Any:
        if not member_id:
            return member_id, instance, UNKNOWN
        return original(ctx, g, member_id, instance, reason)

    mp.setattr(membership, "_leave_one", leave_one)


@fault
def batch_leave_first_only(mp: pytest.MonkeyPatch) -> None:
    _map_request(
        mp,
        membership,
        "leave_group",
        lambda _ctx, req: dataclasses.replace(req, members=req.members[:1]),
    )


@fault
def no_rebalance_on_leave(mp: pytest.MonkeyPatch) -> None:
    # Leaves and expiries remove the member but never start a rebalance.
    mp.setattr(membership, "maybe_prepare_rebalance_or_complete_join", lambda ctx, g, r, t: None)


@fault
def no_max_size(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(join, "_accepts_joining_member", lambda ctx, g, member_id: True)


# -- offsets and admin -----------------------------------------------------------------------


@fault
def fetch_unknown_as_zero(mp: pytest.MonkeyPatch) -> None:
    def zero(_args: Any, result: OffsetFetchResult) -> OffsetFetchResult:
        topics = [
            TopicOffsets(
                t.topic, [dataclasses.replace(p, offset=max(p.offset, 0)) for p in t.partitions]
            )
            for t in result.topics
        ]
        return OffsetFetchResult(result.error_code, topics)

    _map_result(mp, offsets, "fetch_offsets", zero)


@fault
def metadata_size_unchecked(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(offsets, "_java_length_exceeds", lambda _text, _limit: False)


@fault
def describe_hides_members(mp: pytest.MonkeyPatch) -> None:
    _map_result(mp, admin, "describe_group", lambda _a, d: dataclasses.replace(d, members=[]))


@fault
def list_omits_empty_groups(mp: pytest.MonkeyPatch) -> None:
    _map_result(
        mp, admin, "list_groups", lambda _a, rows: [r for r in rows if r.group_state != "Empty"]
    )


@fault
def delete_non_empty_groups(mp: pytest.MonkeyPatch) -> None:
    # Reports success for groups it must refuse (without touching them).
    _map_result(
        mp,
        admin,
        "delete_groups",
        lambda _a, rows: [(g, 0 if e == ErrorCode.NON_EMPTY_GROUP else e) for g, e in rows],
    )


@fault
def delete_reports_success_without_deleting(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(admin, "delete_group", lambda ctx, g, reason: None)


# -- coordinators (a cluster) ------------------------------------------------------------------


@fault
def find_coordinator_unknown_node(mp: pytest.MonkeyPatch) -> None:
    def elsewhere(_args: Any, found: Any) -> Any:
        if isinstance(found, handlers_cluster.Located):
            return dataclasses.replace(found, node_id=found.node_id + 1000)
        return found

    _map_result(mp, handlers_cluster, "_owner_address", elsewhere)


@fault
def every_node_names_itself(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(
        handlers_cluster,
        "_owner_address",
        lambda node, conn, _group: handlers_cluster.Located(
            node.settings.node_id, *node.advertised_for(conn)
        ),
    )


@fault
def every_node_coordinates(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(ClusterRouting, "refusal", lambda _self, _group, _now: None)


# -- version matrix ---------------------------------------------------------------------------


@fault
def responses_one_version_down(mp: pytest.MonkeyPatch) -> None:
    """Answers an older version in the layout of the one below it (the newest versions,
    which clients and the runner speak, and ApiVersions are answered right)."""
    original = connection.encode_response

    def older(api: Any, version: int, correlation_id: int, body: Any) -> bytes:
        if api.key != 18 and api.min_version < version < api.max_version:
            version -= 1
        return original(api, version, correlation_id, body)

    mp.setattr(connection, "encode_response", older)


@fault
def topic_ids_unknown(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Catalog, "by_id", lambda self, topic_id: None)


# -- KIP-848 consumer groups ------------------------------------------------------------------


@fault
def kip848_no_assignment(mp: pytest.MonkeyPatch) -> None:
    _map_result(
        mp,
        consumer_heartbeat,
        "_heartbeat",
        lambda _a, r: dataclasses.replace(r, assignment=None),
    )


@fault
def kip848_assign_before_revoke(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(ConsumerGroup, "partition_epoch", lambda self, topic, partition: -1)


@fault
def kip848_skip_epoch_check(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(consumer_heartbeat, "_check_epoch", lambda m, req: None)


@fault
def kip848_unknown_member_accepted(mp: pytest.MonkeyPatch) -> None:
    def accepted(member_id: str, group_id: str) -> consumer_heartbeat.HeartbeatError:
        return consumer_heartbeat.HeartbeatError(ErrorCode.NONE)

    mp.setattr(consumer_heartbeat, "_unknown", accepted)


@fault
def kip848_commit_skips_epoch(mp: pytest.MonkeyPatch) -> None:
    def current(g: Any, req: Any) -> int:
        m = g.members.get(req.member_id)
        if m is None:
            return original(g, req)
        return original(g, dataclasses.replace(req, generation_id=m.member_epoch))

    original = ConsumerGroup.validate_offset_commit
    mp.setattr(ConsumerGroup, "validate_offset_commit", current)


@fault
def kip848_leave_keeps_partitions(mp: pytest.MonkeyPatch) -> None:
    """A leave answered, but the member stays with its partitions."""

    def leave(ctx: Context, req: Any) -> Any:
        return consumer_heartbeat.ConsumerHeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=-1
        )

    mp.setattr(consumer_heartbeat, "_leave", leave)


@fault
def kip848_static_assignment_lost(mp: pytest.MonkeyPatch) -> None:
    original = consumer_heartbeat.replace_static

    def fresh(ctx: Context, g: Any, old: Any, member_id: str) -> Any:
        m = original(ctx, g, old, member_id)
        g.release(m)
        m.assigned = {}
        g.target[member_id] = {}
        return m

    mp.setattr(consumer_heartbeat, "replace_static", fresh)


@fault
def kip848_regex_matches_nothing(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(consumer_regex, "matching", lambda pattern, topics: frozenset())
