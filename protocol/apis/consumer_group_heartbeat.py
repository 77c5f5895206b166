"""ConsumerGroupHeartbeat (68): the KIP-848 consumer group protocol."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class ConsumerGroupHeartbeatRequestTopicPartitions(Struct):
    topic_id: uuid.UUID = f("uuid")
    partitions: list[int] = f(array("int32"))


@message(api_key=68, valid="0-1", flexible="0+")
@dataclass(slots=True, kw_only=True)
class ConsumerGroupHeartbeatRequest(Struct):
    group_id: str = f("string")
    member_id: str = f("string")
    member_epoch: int = f("int32")
    instance_id: str | None = f("string", nullable="0+", default=None)
    rack_id: str | None = f("string", nullable="0+", default=None)
    rebalance_timeout_ms: int = f("int32", default=-1)
    subscribed_topic_names: list[str] | None = f(array("string"), nullable="0+", default=None)
    subscribed_topic_regex: str | None = f("string", "1+", nullable="1+", default=None)
    server_assignor: str | None = f("string", nullable="0+", default=None)
    topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None = f(
        array(ConsumerGroupHeartbeatRequestTopicPartitions),
        nullable="0+",
        default=None,
    )


@dataclass(slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponseTopicPartitions(Struct):
    topic_id: uuid.UUID = f("uuid")
    partitions: list[int] = f(array("int32"))


@dataclass(slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponseAssignment(Struct):
    topic_partitions: list[ConsumerGroupHeartbeatResponseTopicPartitions] = f(
        array(ConsumerGroupHeartbeatResponseTopicPartitions),
    )


@message(api_key=68, valid="0-1", flexible="0+")
@dataclass(slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponse(Struct):
    throttle_time_ms: int = f("int32")
    error_code: int = f("int16")
    error_message: str | None = f("string", nullable="0+", default=None)
    member_id: str | None = f("string", nullable="0+", default=None)
    member_epoch: int = f("int32")
    heartbeat_interval_ms: int = f("int32")
    assignment: ConsumerGroupHeartbeatResponseAssignment | None = f(
        ConsumerGroupHeartbeatResponseAssignment,
        nullable="0+",
        default=None,
    )
