"""CreateTopics (19): create (virtual) topics."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class CreateTopicsRequestCreatableReplicaAssignment(Struct):
    partition_index: int = f("int32")
    broker_ids: list[int] = f(array("int32"))


@dataclass(slots=True, kw_only=True)
class CreateTopicsRequestCreatableTopicConfig(Struct):
    name: str = f("string")
    value: str | None = f("string", nullable="0+")


@dataclass(slots=True, kw_only=True)
class CreateTopicsRequestCreatableTopic(Struct):
    name: str = f("string")
    num_partitions: int = f("int32")
    replication_factor: int = f("int16")
    assignments: list[CreateTopicsRequestCreatableReplicaAssignment] = f(
        array(CreateTopicsRequestCreatableReplicaAssignment),
    )
    configs: list[CreateTopicsRequestCreatableTopicConfig] = f(
        array(CreateTopicsRequestCreatableTopicConfig),
    )


@message(api_key=19, valid="2-7", flexible="5+")
@dataclass(slots=True, kw_only=True)
class CreateTopicsRequest(Struct):
    topics: list[CreateTopicsRequestCreatableTopic] = f(array(CreateTopicsRequestCreatableTopic))
    timeout_ms: int = f("int32", default=60000)
    validate_only: bool = f("bool", "1+")


@dataclass(slots=True, kw_only=True)
class CreateTopicsResponseCreatableTopicConfigs(Struct):
    name: str = f("string", "5+")
    value: str | None = f("string", "5+", nullable="5+")
    read_only: bool = f("bool", "5+")
    config_source: int = f("int8", "5+", default=-1, ignorable=True)
    is_sensitive: bool = f("bool", "5+")


@dataclass(slots=True, kw_only=True)
class CreateTopicsResponseCreatableTopicResult(Struct):
    name: str = f("string")
    topic_id: uuid.UUID = f("uuid", "7+", ignorable=True)
    error_code: int = f("int16")
    error_message: str | None = f("string", "1+", nullable="0+", ignorable=True)
    topic_config_error_code: int = f("int16", "5+", tag=0, tagged="5+", ignorable=True)
    num_partitions: int = f("int32", "5+", default=-1, ignorable=True)
    replication_factor: int = f("int16", "5+", default=-1, ignorable=True)
    configs: list[CreateTopicsResponseCreatableTopicConfigs] | None = f(
        array(CreateTopicsResponseCreatableTopicConfigs),
        "5+",
        nullable="5+",
        ignorable=True,
    )


@message(api_key=19, valid="2-7", flexible="5+")
@dataclass(slots=True, kw_only=True)
class CreateTopicsResponse(Struct):
    throttle_time_ms: int = f("int32", "2+", ignorable=True)
    topics: list[CreateTopicsResponseCreatableTopicResult] = f(
        array(CreateTopicsResponseCreatableTopicResult),
    )
