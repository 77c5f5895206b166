"""ConsumerGroupDescribe (DescribeGroups describes classic groups only: a consumer group is
"not found" there, as in Kafka; ListGroups and DeleteGroups serve every kind: ../admin.py)."""

from __future__ import annotations

from dataclasses import field

from protocol.errors import ErrorCode

from ..frozen import frozen
from .config import DEFAULT_ASSIGNOR
from .group import ConsumerGroup
from .member import Partitions


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
    #: It speaks the classic protocol (online migration).
    classic: bool = False


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


def describe(g: object, group_id: str) -> DescribedConsumerGroup:
    """``g``: the group of that id, of whichever kind, or None."""
    if not isinstance(g, ConsumerGroup):
        message = (
            f"Group {group_id} not found."
            if g is None
            else f"Group {group_id} is not a consumer group."
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
                # Partitions being revoked are still the member's (KAFKA-20431, Kafka 4.3).
                assignment=_lists(_merged(m.assigned, m.pending_revocation)),
                target_assignment=_lists(g.target.get(m.member_id, {})),
                classic=m.classic is not None,
            )
            for m in g.members.values()
        ],
    )


def _merged(a: Partitions, b: Partitions) -> Partitions:
    return {
        topic: a.get(topic, frozenset()) | b.get(topic, frozenset())
        for topic in a.keys() | b.keys()
    }
