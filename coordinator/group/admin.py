"""DescribeGroups, ListGroups and DeleteGroups (spec 4.12)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from .context import Context, Shard
from .group import ClassicGroup
from .offsets import delete_group
from .results import DescribedGroup, DescribedMember, GroupError, ListedGroup
from .states import DEAD, EMPTY, STABLE

#: Every group here is a classic group (ListGroups v5+ GroupType, KIP-848).
CLASSIC = "classic"


def describe_group(shard: Shard, group_id: str) -> DescribedGroup:
    g = shard.groups.get(group_id)
    if g is None:
        # DescribeGroups v6+ turns this into GROUP_ID_NOT_FOUND at the API layer.
        return DescribedGroup(0, group_id, DEAD.value, "", "", [])
    stable = g.state is STABLE
    protocol = g.protocol_name
    assignments = {m.member_id: m.assignment for m in g.members.values()}
    if group_id in shard.unstored:
        # An assignment is shown once stored (durability.py): until then, the stored one.
        stored = shard.durable.get(group_id)
        kept = {m.member_id: m.assignment for m in stored.members} if stored else {}
        assignments = {member_id: kept.get(member_id, b"") for member_id in assignments}
    return DescribedGroup(
        error_code=0,
        group_id=group_id,
        group_state=g.state.value,
        protocol_type=g.protocol_type or "",
        protocol_data=(protocol or "") if stable else "",
        # Metadata only when Stable; the assignment always (the Java coordinator's choice).
        members=[
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata_for(protocol) if stable else b"",
                member_assignment=assignments[m.member_id],
            )
            for m in g.members.values()
        ],
    )


def list_groups(
    groups: dict[str, ClassicGroup], states_filter: list[str], types_filter: list[str]
) -> list[ListedGroup]:
    if types_filter and CLASSIC not in {t.strip().lower() for t in types_filter}:
        return []
    states = {s.strip().lower() for s in states_filter}
    return [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.value, CLASSIC)
        for g in groups.values()
        if not states or g.state.value.lower() in states
    ]


def delete_groups(ctx: Context, group_ids: list[str]) -> list[GroupError]:
    results: list[GroupError] = []
    for group_id in group_ids:
        g = ctx.groups.get(group_id)
        if g is None or g.state is DEAD:
            results.append(GroupError(group_id, ErrorCode.GROUP_ID_NOT_FOUND))
        elif g.state is not EMPTY:
            results.append(GroupError(group_id, ErrorCode.NON_EMPTY_GROUP))
        else:
            delete_group(ctx, g, "DeleteGroups")
            results.append(GroupError(group_id, ErrorCode.NONE))
    return results
