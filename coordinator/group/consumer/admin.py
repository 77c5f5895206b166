"""ListGroups and DeleteGroups for consumer groups (DescribeGroups describes classic groups
only: a consumer group is "not found" there, as in Kafka)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..results import GroupError, ListedGroup
from .group import CONSUMER, ConsumerGroup


def list_groups(
    groups: dict[str, ConsumerGroup], states_filter: list[str], types_filter: list[str]
) -> list[ListedGroup]:
    if types_filter and CONSUMER not in {t.strip().lower() for t in types_filter}:
        return []
    states = {s.strip().lower() for s in states_filter}
    listed = []
    for g in groups.values():
        state = g.state.value
        if not states or state.lower() in states:
            listed.append(ListedGroup(g.group_id, CONSUMER, state, CONSUMER))
    return listed


def deletable(g: ConsumerGroup) -> GroupError | None:
    """None when the group may be deleted (it is empty); else the error to answer."""
    if g.members:
        return GroupError(g.group_id, ErrorCode.NON_EMPTY_GROUP)
    return None
