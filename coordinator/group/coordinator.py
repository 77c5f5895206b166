"""The classic group coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the timers
that drive rebalances (spec 4.3-4.11). Offsets live in ``offsets.py``.

Theory of operation. A request method validates (spec 4.4 order), changes the group, and
appends to an ``Effects``: replies for request tokens, keyed timer changes, records to
persist and events. JoinGroup and SyncGroup may *park*: the member keeps the token and the
reply is emitted later, when the join phase completes (everyone rejoined, or the join
timer fired) or the leader's SyncGroup arrives. Timers are keyed strings; every deadline is
remembered here, so a firing that is stale (rescheduled, cancelled, or for a generation
that has moved on) is ignored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from protocol.errors import ErrorCode

from . import events
from .config import GroupConfig
from .effects import Cancel, Effects, Schedule
from .group import ClassicGroup
from .member import Member
from .admin import GroupAdminMixin
from .offsets import OffsetsMixin
from .records import GroupMetadataRecord, MemberRecord
from .requests import HeartbeatInput, JoinGroupInput, LeaveGroupInput, SyncGroupInput
from .results import HeartbeatResult, JoinGroupResult, LeaveGroupResult, SyncGroupResult
from .states import GroupState

E = GroupState.EMPTY
PR = GroupState.PREPARING_REBALANCE
CR = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

HEARTBEAT, JOIN, SYNC = "heartbeat", "join", "sync"


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


def _wall_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator(GroupAdminMixin, OffsetsMixin):
    def __init__(
        self,
        config: GroupConfig,
        new_member_id: Callable[[str], str] | None = None,
        wall_clock: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        self._new_member_id = new_member_id or _default_member_id
        # Wall-clock time only stamps what is persisted (commit times, last heartbeats);
        # every timer runs on the monotonic `now_ms` the caller passes in.
        self.wall_ms = wall_clock or _wall_ms
        self._deadlines: dict[str, int] = {}
        self._timer_targets: dict[str, tuple[str, str, str]] = {}

    # ====================================================================================
    # Timers

    def _key(self, kind: str, group_id: str, member_id: str = "") -> str:
        key = f"{kind}/{group_id}/{member_id}" if member_id else f"{kind}/{group_id}"
        self._timer_targets[key] = (kind, group_id, member_id)
        return key

    def _schedule(self, out: Effects, key: str, deadline_ms: int) -> None:
        self._deadlines[key] = deadline_ms
        out.timers.append(Schedule(key, deadline_ms))

    def _cancel(self, out: Effects, key: str) -> None:
        if self._deadlines.pop(key, None) is not None:
            out.timers.append(Cancel(key))
        self._timer_targets.pop(key, None)

    def _heartbeat_key(self, group_id: str, member_id: str) -> str:
        return self._key(HEARTBEAT, group_id, member_id)

    def _restart_session(self, out: Effects, g: ClassicGroup, m: Member, now: int) -> None:
        m.last_heartbeat_wall_ms = self.wall_ms()
        self._schedule(out, self._heartbeat_key(g.group_id, m.member_id), now + m.session_timeout_ms)

    def fire_timer(self, key: str, now_ms: int) -> Effects:
        out = Effects()
        deadline = self._deadlines.get(key)
        target = self._timer_targets.get(key)
        if deadline is None or target is None or deadline > now_ms:
            return out  # stale or early: it was rescheduled or cancelled
        del self._deadlines[key]
        kind, group_id, member_id = target
        g = self.groups.get(group_id)
        if g is None:
            return out
        if kind == HEARTBEAT:
            self._expire_member(out, g, member_id, now_ms)
        elif kind == JOIN and g.state is PR:
            if g.join_initial:
                self._initial_delay_elapsed(out, g, now_ms)
            else:
                self._complete_join(out, g, now_ms)
        elif kind == SYNC and g.is_in(CR, STABLE) and g.sync_generation == g.generation_id:
            self._sync_expired(out, g, now_ms)
        return out

    # ====================================================================================
    # State changes, persistence and events

    def _transition(self, out: Effects, g: ClassicGroup, target: GroupState) -> None:
        old = g.transition(target)
        out.events.append(events.StateChanged(g.group_id, old.value, target.value))

    def _persist_group(self, out: Effects, g: ClassicGroup) -> None:
        out.records.append(
            GroupMetadataRecord(
                group_id=g.group_id,
                state=g.state.value,
                protocol_type=g.protocol_type,
                protocol_name=g.protocol_name,
                generation_id=g.generation_id,
                leader_id=g.leader_id,
                empty_since_wall_ms=g.empty_since_wall_ms,
                members=[
                    MemberRecord(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        rebalance_timeout_ms=m.rebalance_timeout_ms,
                        session_timeout_ms=m.session_timeout_ms,
                        protocol_type=m.protocol_type,
                        protocols=list(m.protocols),
                        assignment=m.assignment,
                        last_heartbeat_wall_ms=m.last_heartbeat_wall_ms,
                    )
                    for m in g.members.values()
                ],
            )
        )

    # ====================================================================================
    # JoinGroup (spec 4.4, 4.5, 4.7-4.9)

    def join_group(self, token: object, req: JoinGroupInput, now_ms: int) -> Effects:
        out = Effects()

        def fail(code: int, member_id: str = req.member_id) -> Effects:
            out.reply(token, JoinGroupResult(error_code=code, member_id=member_id))
            return out

        if not req.group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if not (
            self.config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        g = self.groups.get(req.group_id)
        if g is None:
            if req.member_id:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            g = ClassicGroup(req.group_id)
            self.groups[req.group_id] = g
        if g.state is DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not self._accepts_joining_member(g, req.member_id):
            # KIP-389: a member over the limit is removed (without a rebalance of its own).
            if req.member_id in g.members:
                self._remove_member(out, g, req.member_id, "group max size reached", now_ms,
                                    rebalance=False)
            return fail(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if not g.supports_protocols(req.protocol_type, {n for n, _ in req.protocols}):
            self._discard_if_unused(g)
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if not req.member_id:
            self._join_unknown_member(out, g, token, req, now_ms)
        else:
            self._join_known_member(out, g, token, req, now_ms)
        return out

    def _discard_if_unused(self, g: ClassicGroup) -> None:
        if not g.members and not g.offsets and g.generation_id == 0 and not g.pending_join:
            self.groups.pop(g.group_id, None)

    def _accepts_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_size
        if g.is_in(E, DEAD):
            return True
        member = g.members.get(member_id)
        if g.state is PR:
            return (member is not None and member.join_token is not None) or g.awaiting_join < limit
        return member is not None or len(g.members) < limit

    def _join_unknown_member(
        self, out: Effects, g: ClassicGroup, token: object, req: JoinGroupInput, now: int
    ) -> None:
        instance = req.group_instance_id
        new_id = self._new_member_id(instance if instance is not None else req.client_id)
        if instance is not None and instance in g.static_members:
            self._replace_static_member(out, g, token, req, new_id, now)
        elif instance is None and req.api_version >= 4:
            # KIP-394: hand out an id and make the client come back with it.
            g.pending_join.add(new_id)
            self._schedule(out, self._heartbeat_key(g.group_id, new_id), now + req.session_timeout_ms)
            out.reply(
                token, JoinGroupResult(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id)
            )
        else:
            self._add_member_and_rebalance(out, g, token, req, new_id, now)

    def _join_known_member(
        self, out: Effects, g: ClassicGroup, token: object, req: JoinGroupInput, now: int
    ) -> None:
        member_id = req.member_id
        if member_id in g.pending_join:
            if req.group_instance_id is not None:
                # Kafka treats this as an internal error: pending ids are dynamic only.
                out.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=member_id))
                return
            self._add_member_and_rebalance(out, g, token, req, member_id, now)
            return
        error = self._member_error(g, member_id, req.group_instance_id)
        if error:
            out.reply(token, JoinGroupResult(error_code=error, member_id=member_id))
            return
        member = g.members[member_id]
        same = member.protocols == req.protocols
        if g.state is PR:
            self._update_member(g, member, req)
            self._park_join(out, g, member, token)
            self._maybe_complete_join(out, g, now)
        elif g.state is CR:
            if same:
                # Nothing changed: answer with the generation being synced.
                out.reply(token, self._join_result(g, member_id))
            else:
                self._update_member(g, member, req)
                self._park_join(out, g, member, token)
                self._prepare_rebalance(out, g, now, f"member {member_id} rejoined with new metadata")
        elif g.state is STABLE:
            if member_id == g.leader_id or not same:
                # A leader's JoinGroup always rebalances: that is how it asks for a new round.
                self._update_member(g, member, req)
                self._park_join(out, g, member, token)
                reason = "leader rejoined" if same else f"member {member_id} changed metadata"
                self._prepare_rebalance(out, g, now, reason)
            else:
                out.reply(token, self._join_result(g, member_id, with_members=False))
        else:  # Empty groups have no members; unreachable after the member check.
            out.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _member_error(self, g: ClassicGroup, member_id: str, instance: str | None) -> int:
        """Spec 4.4's member checks: unknown instance 25, instance of another member 82,
        unknown member 25."""
        if instance is not None:
            owner = g.static_members.get(instance)
            if owner is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if owner != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return 0

    def _update_member(self, g: ClassicGroup, member: Member, req: JoinGroupInput) -> None:
        g.update_protocols(member, list(req.protocols))
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.client_id = req.client_id
        member.client_host = req.client_host

    def _park_join(self, out: Effects, g: ClassicGroup, member: Member, token: object) -> None:
        replaced = g.park_join(member, token)
        if replaced is not None:
            # A second JoinGroup for the same member (e.g. a retry on a new connection).
            out.reply(replaced, JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS,
                                                member_id=member.member_id))

    def _join_result(self, g: ClassicGroup, member_id: str, with_members: bool = True) -> JoinGroupResult:
        is_leader = member_id == g.leader_id
        return JoinGroupResult(
            error_code=0,
            generation_id=g.generation_id,
            protocol_type=g.protocol_type,
            protocol_name=g.protocol_name,
            leader=g.leader_id or "",
            member_id=member_id,
            members=g.current_members_list() if (is_leader and with_members) else [],
        )

    def _add_member_and_rebalance(
        self, out: Effects, g: ClassicGroup, token: object, req: JoinGroupInput,
        member_id: str, now: int,
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=list(req.protocols),
            join_token=token,
            last_heartbeat_wall_ms=self.wall_ms(),
        )
        g.pending_join.discard(member_id)
        g.add(member)
        out.events.append(
            events.MemberJoined(g.group_id, member_id, req.group_instance_id, req.client_id,
                                req.client_host, [n for n, _ in req.protocols])
        )
        # New members cannot heartbeat yet (spec 4.10): a fixed join timeout instead.
        self._schedule(out, self._heartbeat_key(g.group_id, member_id),
                       now + self.config.new_member_join_timeout_ms)
        reason = f"adding new member {member_id}" + (f" ({req.reason})" if req.reason else "")
        self._maybe_prepare_rebalance_or_complete_join(out, g, now, reason)

    def _replace_static_member(
        self, out: Effects, g: ClassicGroup, token: object, req: JoinGroupInput,
        new_id: str, now: int,
    ) -> None:
        """KIP-345: a known instance id joins with an unknown member id (spec 4.7)."""
        assert req.group_instance_id is not None
        member = g.members[g.static_members[req.group_instance_id]]
        old_leader = g.leader_id
        old_id = member.member_id
        # The old incarnation's parked requests are fenced.
        old_join = g.take_join(member)
        if old_join is not None:
            out.reply(old_join, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        if member.sync_token is not None:
            out.reply(member.sync_token, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
            member.sync_token = None
        self._cancel(out, self._heartbeat_key(g.group_id, old_id))
        g.rekey(member, new_id)
        old_protocol = g.protocol_name
        self._update_member(g, member, req)
        self._restart_session(out, g, member, now)
        out.events.append(
            events.StaticMemberReplaced(g.group_id, req.group_instance_id, old_id, new_id)
        )
        if g.state is STABLE:
            if g.select_protocol() == old_protocol:
                # Same protocol: no rebalance; the returning member gets the current state.
                self._persist_group(out, g)
                is_leader = new_id == g.leader_id
                if req.api_version >= 9:
                    result = JoinGroupResult(
                        error_code=0, generation_id=g.generation_id,
                        protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                        leader=g.leader_id or "", member_id=new_id, skip_assignment=is_leader,
                        members=g.current_members_list() if is_leader else [],
                    )
                else:
                    # Pre-KIP-814 clients must not re-run the assignment: report the old
                    # leader id so a returning leader does not think it leads.
                    result = JoinGroupResult(
                        error_code=0, generation_id=g.generation_id,
                        protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                        leader=old_leader or "", member_id=new_id,
                    )
                out.reply(token, result)
            else:
                self._park_join(out, g, member, token)
                self._prepare_rebalance(out, g, now, f"static member {new_id} changed protocol")
        elif g.state is CR:
            self._park_join(out, g, member, token)
            self._prepare_rebalance(out, g, now, f"static member {new_id} replaced {old_id}")
        else:
            self._park_join(out, g, member, token)
            self._maybe_complete_join(out, g, now)

    # ====================================================================================
    # The join phase (spec 4.5)

    def _maybe_prepare_rebalance_or_complete_join(
        self, out: Effects, g: ClassicGroup, now: int, reason: str
    ) -> None:
        if g.is_in(STABLE, CR, E):
            self._prepare_rebalance(out, g, now, reason)
        else:
            self._maybe_complete_join(out, g, now)

    def _prepare_rebalance(self, out: Effects, g: ClassicGroup, now: int, reason: str) -> None:
        if g.state is CR:
            # Assignments of the abandoned generation are void; parked syncs must rejoin.
            for m in g.members.values():
                m.assignment = b""
                if m.sync_token is not None:
                    out.reply(m.sync_token, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    m.sync_token = None
        self._cancel(out, self._key(SYNC, g.group_id))
        g.pending_sync.clear()
        initial = g.state is E
        self._transition(out, g, PR)
        out.events.append(events.RebalanceStarted(g.group_id, g.generation_id, reason))
        join_key = self._key(JOIN, g.group_id)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            g.join_initial = True
            g.new_member_added = False
            g.join_delay_ms = delay
            g.join_remaining_ms = max(g.rebalance_timeout_ms() - delay, 0)
            self._schedule(out, join_key, now + delay)
        else:
            g.join_initial = False
            if g.all_joined():
                self._complete_join(out, g, now)
            else:
                self._schedule(out, join_key, now + g.rebalance_timeout_ms())

    def _initial_delay_elapsed(self, out: Effects, g: ClassicGroup, now: int) -> None:
        # Each newcomer during the initial delay buys up to one more delay, capped by the
        # rebalance timeout (spec 4.5).
        if g.new_member_added and g.join_remaining_ms > 0:
            g.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, g.join_remaining_ms)
            g.join_remaining_ms = max(g.join_remaining_ms - g.join_delay_ms, 0)
            g.join_delay_ms = delay
            self._schedule(out, self._key(JOIN, g.group_id), now + delay)
        else:
            self._complete_join(out, g, now)

    def _maybe_complete_join(self, out: Effects, g: ClassicGroup, now: int) -> None:
        # The initial rebalance always waits for its delay timer.
        if g.state is PR and g.all_joined() and not g.join_initial:
            self._complete_join(out, g, now)

    def _complete_join(self, out: Effects, g: ClassicGroup, now: int) -> None:
        self._cancel(out, self._key(JOIN, g.group_id))
        g.join_initial = False
        for m in [m for m in g.members.values() if m.join_token is None]:
            if m.group_instance_id is None:  # static members are kept (spec 4.7)
                self._remove_member(out, g, m.member_id, "did not rejoin before the rebalance "
                                    "timeout", now, rebalance=False)
        if g.state is DEAD:
            return
        leader = g.members.get(g.leader_id or "")
        if leader is None or leader.join_token is None:
            g.leader_id = next((m.member_id for m in g.members.values() if m.join_token), None)
            if g.leader_id is None and g.members:
                # Only static members remain and none rejoined: keep waiting.
                self._schedule(out, self._key(JOIN, g.group_id), now + g.rebalance_timeout_ms())
                return
        g.generation_id += 1
        if not g.members:
            g.protocol_name = None
            g.leader_id = None
            g.empty_since_wall_ms = self.wall_ms()
            self._transition(out, g, E)
            out.events.append(events.JoinCompleted(g.group_id, g.generation_id, 0, None, None))
            self._persist_group(out, g)
            return
        g.protocol_name = g.select_protocol()
        self._transition(out, g, CR)
        everyone = g.current_members_list()
        for m in g.members.values():
            token = g.take_join(m)
            if token is not None:
                out.reply(
                    token,
                    JoinGroupResult(
                        error_code=0, generation_id=g.generation_id,
                        protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                        leader=g.leader_id or "", member_id=m.member_id,
                        members=everyone if m.member_id == g.leader_id else [],
                    ),
                )
            m.is_new = False
            self._restart_session(out, g, m, now)
            g.pending_sync.add(m.member_id)
        g.sync_generation = g.generation_id
        self._schedule(out, self._key(SYNC, g.group_id), now + g.rebalance_timeout_ms())
        out.events.append(
            events.JoinCompleted(g.group_id, g.generation_id, len(g.members), g.leader_id,
                                 g.protocol_name)
        )
        self._persist_group(out, g)

    def _sync_expired(self, out: Effects, g: ClassicGroup, now: int) -> None:
        for member_id in list(g.pending_sync):
            self._remove_member(out, g, member_id, "no SyncGroup before the rebalance timeout",
                                now, rebalance=False)
        if g.is_in(STABLE, CR):
            self._prepare_rebalance(out, g, now, "members failed to sync in time")

    # ====================================================================================
    # Member removal and expiry (spec 4.10)

    def _remove_member(
        self, out: Effects, g: ClassicGroup, member_id: str, reason: str, now: int,
        rebalance: bool = True,
    ) -> None:
        member = g.members.get(member_id)
        if member is None:
            return
        token = g.take_join(member)
        if token is not None:
            out.reply(token, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
        if member.sync_token is not None:
            out.reply(member.sync_token, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_token = None
        g.remove(member_id)
        self._cancel(out, self._heartbeat_key(g.group_id, member_id))
        out.events.append(
            events.MemberRemoved(g.group_id, member_id, member.group_instance_id, reason)
        )
        if rebalance:
            if g.is_in(STABLE, CR):
                self._prepare_rebalance(out, g, now, f"removing member {member_id}: {reason}")
            elif g.state is PR:
                self._maybe_complete_join(out, g, now)

    def _expire_member(self, out: Effects, g: ClassicGroup, member_id: str, now: int) -> None:
        if member_id in g.pending_join:
            g.pending_join.discard(member_id)
            self._timer_targets.pop(self._heartbeat_key(g.group_id, member_id), None)
            self._maybe_complete_join(out, g, now)
            self._discard_if_unused(g)
            return
        member = g.members.get(member_id)
        if member is None:
            return
        if (member.join_token is not None or member.sync_token is not None) and not member.is_new:
            return  # awaiting a phase that will restart its session
        reason = "join timeout of a new member" if member.is_new else "session timeout"
        self._remove_member(out, g, member_id, reason, now)

    # ====================================================================================
    # SyncGroup (spec 4.6)

    def sync_group(self, token: object, req: SyncGroupInput, now_ms: int) -> Effects:
        out = Effects()

        def fail(code: int) -> Effects:
            out.reply(token, SyncGroupResult(error_code=code))
            return out

        if req.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if not req.group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        g = self.groups.get(req.group_id)
        if g is None or g.state is E:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if g.state is DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = self._member_error(g, req.member_id, req.group_instance_id)
        if error:
            return fail(error)
        if req.generation_id != g.generation_id:
            return fail(ErrorCode.ILLEGAL_GENERATION)
        if (req.protocol_type is not None and g.protocol_type is not None
                and req.protocol_type != g.protocol_type) or (
                req.protocol_name is not None and g.protocol_name is not None
                and req.protocol_name != g.protocol_name):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = g.members[req.member_id]
        if g.state is PR:
            return fail(ErrorCode.REBALANCE_IN_PROGRESS)
        g.pending_sync.discard(req.member_id)
        if g.state is STABLE:
            out.reply(token, SyncGroupResult(0, g.protocol_type, g.protocol_name, member.assignment))
        else:  # CompletingRebalance: park until the leader's assignment arrives
            if member.sync_token is not None:
                out.reply(member.sync_token, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_token = token
            if req.member_id == g.leader_id:
                self._propagate_assignment(out, g, dict(req.assignments), now_ms)
        if not g.pending_sync:
            self._cancel(out, self._key(SYNC, g.group_id))
        return out

    def _propagate_assignment(
        self, out: Effects, g: ClassicGroup, assignments: dict[str, bytes], now: int
    ) -> None:
        # Members the leader left out get empty assignments; unknown ids are ignored.
        for m in g.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        self._transition(out, g, STABLE)
        for m in g.members.values():
            if m.sync_token is not None:
                out.reply(m.sync_token,
                          SyncGroupResult(0, g.protocol_type, g.protocol_name, m.assignment))
                m.sync_token = None
                self._restart_session(out, g, m, now)
        out.events.append(events.SyncCompleted(g.group_id, g.generation_id))
        self._persist_group(out, g)

    # ====================================================================================
    # Heartbeat

    def heartbeat(self, token: object, req: HeartbeatInput, now_ms: int) -> Effects:
        out = Effects()
        code = self._heartbeat_error(req)
        if code in (0, ErrorCode.REBALANCE_IN_PROGRESS):
            g = self.groups[req.group_id]
            self._restart_session(out, g, g.members[req.member_id], now_ms)
        out.reply(token, HeartbeatResult(code))
        return out

    def _heartbeat_error(self, req: HeartbeatInput) -> int:
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        g = self.groups.get(req.group_id)
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._member_error(g, req.member_id, req.group_instance_id)
        if error:
            return error
        if req.generation_id != g.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if g.state is E:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.state is PR:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return 0

    # ====================================================================================
    # LeaveGroup

    def leave_group(self, token: object, req: LeaveGroupInput, now_ms: int) -> Effects:
        out = Effects()
        if not req.group_id:
            out.reply(token, LeaveGroupResult(ErrorCode.INVALID_GROUP_ID))
            return out
        g = self.groups.get(req.group_id)
        if g is None:
            out.reply(token, LeaveGroupResult(0, [
                (m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i, _ in req.members
            ]))
            return out
        if g.state is DEAD:
            out.reply(token, LeaveGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return out
        results: list[tuple[str, str | None, int]] = []
        changed = False
        for member_id, instance, reason in req.members:
            why = "left the group" + (f" ({reason})" if reason else "")
            if not member_id:
                target = g.static_members.get(instance) if instance is not None else None
                if target is None:
                    results.append((member_id, instance, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                self._remove_member(out, g, target, why, now_ms, rebalance=False)
            elif member_id in g.pending_join:
                g.pending_join.discard(member_id)
                self._cancel(out, self._heartbeat_key(g.group_id, member_id))
            else:
                error = self._member_error(g, member_id, instance)
                if error:
                    results.append((member_id, instance, error))
                    continue
                self._remove_member(out, g, member_id, why, now_ms, rebalance=False)
            changed = True
            results.append((member_id, instance, 0))
        if changed:
            if g.is_in(STABLE, CR):
                self._prepare_rebalance(out, g, now_ms, "members left the group")
            elif g.state is PR:
                self._maybe_complete_join(out, g, now_ms)
        out.reply(token, LeaveGroupResult(0, results))
        return out

    # ====================================================================================
    # Shutdown

    def shutdown(self) -> Effects:
        """Answer every parked request NOT_COORDINATOR, as Kafka does when it unloads."""
        out = Effects()
        for g in self.groups.values():
            for m in g.members.values():
                token = g.take_join(m)
                if token is not None:
                    out.reply(token, JoinGroupResult(ErrorCode.NOT_COORDINATOR,
                                                     member_id=m.member_id))
                if m.sync_token is not None:
                    out.reply(m.sync_token, SyncGroupResult(ErrorCode.NOT_COORDINATOR))
                    m.sync_token = None
        for key in list(self._deadlines):
            out.timers.append(Cancel(key))
        self._deadlines.clear()
        return out
