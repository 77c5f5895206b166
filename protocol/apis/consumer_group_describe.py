"""ConsumerGroupDescribe (69): describe KIP-848 consumer groups."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=69, valid="0-1", flexible="0+")
@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeRequest(Struct):
    group_ids: list[str] = f(array("string"))
    include_authorized_operations: bool = f("bool")


@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeResponseTopicPartitions(Struct):
    topic_id: uuid.UUID = f("uuid")
    topic_name: str = f("string")
    partitions: list[int] = f(array("int32"))


@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeResponseAssignment(Struct):
    topic_partitions: list[ConsumerGroupDescribeResponseTopicPartitions] = f(
        array(ConsumerGroupDescribeResponseTopicPartitions),
    )


@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeResponseMember(Struct):
    member_id: str = f("string")
    instance_id: str | None = f("string", nullable="0+", default=None)
    rack_id: str | None = f("string", nullable="0+", default=None)
    member_epoch: int = f("int32")
    client_id: str = f("string")
    client_host: str = f("string")
    subscribed_topic_names: list[str] = f(array("string"))
    subscribed_topic_regex: str | None = f("string", nullable="0+", default=None)
    assignment: ConsumerGroupDescribeResponseAssignment = f(ConsumerGroupDescribeResponseAssignment)
    target_assignment: ConsumerGroupDescribeResponseAssignment = f(
        ConsumerGroupDescribeResponseAssignment,
    )
    member_type: int = f("int8", "1+", default=-1, ignorable=True)


@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeResponseDescribedGroup(Struct):
    error_code: int = f("int16")
    error_message: str | None = f("string", nullable="0+", default=None)
    group_id: str = f("string")
    group_state: str = f("string")
    group_epoch: int = f("int32")
    assignment_epoch: int = f("int32")
    assignor_name: str = f("string")
    members: list[ConsumerGroupDescribeResponseMember] = f(
        array(ConsumerGroupDescribeResponseMember),
    )
    authorized_operations: int = f("int32", default=-2147483648)


@message(api_key=69, valid="0-1", flexible="0+")
@dataclass(slots=True, kw_only=True)
class ConsumerGroupDescribeResponse(Struct):
    throttle_time_ms: int = f("int32")
    groups: list[ConsumerGroupDescribeResponseDescribedGroup] = f(
        array(ConsumerGroupDescribeResponseDescribedGroup),
    )
