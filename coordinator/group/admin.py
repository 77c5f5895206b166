"""DescribeGroups, ListGroups and DeleteGroups (spec 4.12): ListGroups and DeleteGroups
for groups of every kind, through the Group interface (model.py)."""

from __future__ import annotations

from collections.abc import Iterable

from protocol.errors import ErrorCode

from .classic.group import ClassicGroup
from .classic.states import DEAD, STABLE
from .context import Context, Shard
from .model import Group
from .offsets import delete_group
from .results import DescribedGroup, DescribedMember, GroupError, ListedGroup


def describe_group(shard: Shard, group_id: str) -> DescribedGroup:
    """A classic group; a consumer group is not one (described as Dead, as unknown)."""
    g = shard.groups.get(group_id)
    if not isinstance(g, ClassicGroup):
        # DescribeGroups v6+ turns this into GROUP_ID_NOT_FOUND at the API layer.
        return DescribedGroup(0, group_id, DEAD.value, "", "", [])
    stable = g.state is STABLE
    protocol = g.protocol_name
    assignments = {m.member_id: m.assignment for m in g.members.values()}
    ledger = shard.ledgers.get(group_id)
    if ledger is not None and ledger.in_flight:
        # An assignment is shown once stored (durability.py): until then, the stored one.
        stored = ledger.stored.snapshot
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
    groups: Iterable[Group], states_filter: list[str], types_filter: list[str]
) -> list[ListedGroup]:
    """ListGroups over groups of every kind; the filters are case-insensitive."""
    types = {t.strip().lower() for t in types_filter}
    states = {s.strip().lower() for s in states_filter}
    return [
        g.listed()
        for g in groups
        if (not types or g.group_type in types)
        and (not states or g.state_name.lower() in states)
        and g.state_name != DEAD.value
    ]


def delete_groups(ctx: Context, group_ids: list[str]) -> list[GroupError]:
    results: list[GroupError] = []
    for group_id in group_ids:
        g = ctx.groups.get(group_id)
        error = ErrorCode.GROUP_ID_NOT_FOUND if g is None else g.validate_delete_group()
        if g is not None and not error:
            delete_group(ctx, g, "DeleteGroups")
        results.append(GroupError(group_id, error))
    return results
