"""DescribeGroups, ListGroups, DeleteGroups (spec 4.12) and rebuilding state from records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode

from . import events
from .effects import Effects
from .group import ClassicGroup, OffsetEntry
from .member import Member
from .records import (
    GroupDeletedRecord,
    GroupMetadataRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
)
from .results import DescribedGroup, DescribedMember, ListedGroup
from .states import GroupState, parse_state

if TYPE_CHECKING:
    from .config import GroupConfig

E = GroupState.EMPTY
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

CLASSIC = "classic"


class GroupAdminMixin:
    groups: dict[str, ClassicGroup]
    config: GroupConfig
    wall_ms: Callable[[], int]

    if TYPE_CHECKING:

        def _restart_session(self, out: Effects, g: ClassicGroup, m: Member, now: int) -> None: ...
        def _prepare_rebalance(self, out: Effects, g: ClassicGroup, now: int, reason: str) -> None: ...
        def _transition(self, out: Effects, g: ClassicGroup, target: GroupState) -> None: ...

    def describe_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        return [self._describe(group_id) for group_id in group_ids]

    def _describe(self, group_id: str) -> DescribedGroup:
        g = self.groups.get(group_id)
        if g is None or g.state is DEAD:
            return DescribedGroup(0, group_id, DEAD.value, "", "", [])
        stable = g.state is STABLE
        return DescribedGroup(
            error_code=0,
            group_id=group_id,
            group_state=g.state.value,
            protocol_type=g.protocol_type or "",
            protocol_data=(g.protocol_name or "") if stable else "",
            members=[
                DescribedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata_for(g.protocol_name) if stable else b"",
                    member_assignment=m.assignment,
                )
                for m in g.members.values()
            ],
        )

    def list_groups(self, states_filter: list[str], types_filter: list[str]) -> list[ListedGroup]:
        if types_filter and CLASSIC not in {t.lower() for t in types_filter}:
            return []
        wanted = {parse_state(s) for s in states_filter} if states_filter else None
        return [
            ListedGroup(g.group_id, g.protocol_type or "", g.state.value, CLASSIC)
            for g in self.groups.values()
            if g.state is not DEAD and (wanted is None or g.state in wanted)
        ]

    def delete_groups(
        self, group_ids: list[str], now_ms: int
    ) -> tuple[list[tuple[str, int]], Effects]:
        out = Effects()
        results: list[tuple[str, int]] = []
        for group_id in group_ids:
            g = self.groups.get(group_id)
            if g is None or g.state is DEAD:
                results.append((group_id, int(ErrorCode.GROUP_ID_NOT_FOUND)))
            elif g.state is not E:
                results.append((group_id, int(ErrorCode.NON_EMPTY_GROUP)))
            else:
                self._delete_group(out, g, "deleted by request")
                results.append((group_id, 0))
        return results, out

    def _delete_group(self, out: Effects, g: ClassicGroup, reason: str) -> None:
        self._transition(out, g, DEAD)
        g.offsets.clear()
        del self.groups[g.group_id]
        out.records.append(GroupDeletedRecord(g.group_id))
        out.events.append(events.GroupDeleted(g.group_id, reason))

    # -- loading ---------------------------------------------------------------------------

    def load(self, records: Iterable[object], now_ms: int) -> Effects:
        """Rebuild groups and offsets from persisted records (latest record wins).

        Groups with members come back Stable with each member's remaining session time
        taken from its persisted last heartbeat; a group that was mid-rebalance is
        rebalanced at once; others come back Empty.
        """
        out = Effects()
        snapshots: dict[str, GroupMetadataRecord] = {}
        offsets: dict[str, dict[tuple[str, int], OffsetEntry]] = {}
        for record in records:
            if isinstance(record, GroupMetadataRecord):
                snapshots[record.group_id] = record
            elif isinstance(record, OffsetCommitRecord):
                offsets.setdefault(record.group_id, {})[(record.topic, record.partition)] = (
                    OffsetEntry(record.offset, record.leader_epoch, record.metadata,
                                record.commit_timestamp_ms, record.expire_timestamp_ms)
                )
            elif isinstance(record, OffsetDeleteRecord):
                offsets.get(record.group_id, {}).pop((record.topic, record.partition), None)
            elif isinstance(record, GroupDeletedRecord):
                snapshots.pop(record.group_id, None)
                offsets.pop(record.group_id, None)
        wall = self.wall_ms()
        for group_id in set(snapshots) | set(offsets):
            snap = snapshots.get(group_id)
            g = ClassicGroup(group_id)
            g.offsets = offsets.get(group_id, {})
            self.groups[group_id] = g
            if snap is None:
                g.empty_since_wall_ms = wall
                continue
            g.protocol_type = snap.protocol_type
            g.protocol_name = snap.protocol_name
            g.generation_id = snap.generation_id
            g.empty_since_wall_ms = snap.empty_since_wall_ms
            for mr in snap.members:
                member = Member(
                    member_id=mr.member_id, group_instance_id=mr.group_instance_id,
                    client_id=mr.client_id, client_host=mr.client_host,
                    rebalance_timeout_ms=mr.rebalance_timeout_ms,
                    session_timeout_ms=mr.session_timeout_ms, protocol_type=mr.protocol_type,
                    protocols=list(mr.protocols), assignment=mr.assignment, is_new=False,
                    last_heartbeat_wall_ms=mr.last_heartbeat_wall_ms,
                )
                g.add(member)
            g.leader_id = snap.leader_id if snap.leader_id in g.members else g.leader_id
            if not g.members:
                continue
            # Loaded groups with members are Stable (spec 4.12); walk the legal path there.
            g.state = GroupState.COMPLETING_REBALANCE
            self._transition(out, g, STABLE)
            for m in g.members.values():
                elapsed = max(0, wall - m.last_heartbeat_wall_ms)
                remaining = max(0, m.session_timeout_ms - elapsed)
                self._restart_session(out, g, m, now_ms - (m.session_timeout_ms - remaining))
                m.last_heartbeat_wall_ms = wall - elapsed
            if snap.state != STABLE.value:
                self._prepare_rebalance(out, g, now_ms, "loaded mid-rebalance")
        return out
