"""ListGroups, DeleteGroups and ConsumerGroupDescribe for consumer groups (DescribeGroups
describes classic groups only: a consumer group is "not found" there, as in Kafka)."""

from __future__ import annotations

from dataclasses import field

from protocol.errors import ErrorCode

from ..frozen import frozen
from ..results import GroupError, ListedGroup
from .config import DEFAULT_ASSIGNOR
from .group import CONSUMER, ConsumerGroup
from .member import Partitions


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


@frozen
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: dict[str, list[int]]
    target_assignment: dict[str, list[int]]


@frozen
class DescribedConsumerGroup:
    """ConsumerGroupDescribe's answer for one group (error_code: GROUP_ID_NOT_FOUND when
    it is not a consumer group)."""

    group_id: str
    error_code: int = 0
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedMember] = field(default_factory=list)


def _lists(parts: Partitions) -> dict[str, list[int]]:
    return {topic: sorted(ps) for topic, ps in sorted(parts.items())}


def describe(
    groups: dict[str, ConsumerGroup], group_id: str, classic: bool
) -> DescribedConsumerGroup:
    """``classic``: a classic group holds the id (a consumer group's offsets also sit on
    one, so only without a consumer group is that "not a consumer group")."""
    g = groups.get(group_id)
    if g is None:
        message = (
            f"Group {group_id} is not a consumer group."
            if classic
            else f"Group {group_id} not found."
        )
        return DescribedConsumerGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
    return DescribedConsumerGroup(
        group_id=group_id,
        group_state=g.state.value,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor_name=g.preferred_assignor(DEFAULT_ASSIGNOR),
        members=[
            DescribedMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_lists(m.assigned),
                target_assignment=_lists(g.target.get(m.member_id, {})),
            )
            for m in g.members.values()
        ],
    )
