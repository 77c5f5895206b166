"""ListOffsets (2): earliest/latest offsets of partitions."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class ListOffsetsPartition(Struct):
    partition_index: int = f("int32")
    current_leader_epoch: int = f("int32", "4+", default=-1, ignorable=True)
    timestamp: int = f("int64")


@dataclass(slots=True, kw_only=True)
class ListOffsetsTopic(Struct):
    name: str = f("string")
    partitions: list[ListOffsetsPartition] = f(array(ListOffsetsPartition))


@message(api_key=2, valid="1-11", flexible="6+")
@dataclass(slots=True, kw_only=True)
class ListOffsetsRequest(Struct):
    replica_id: int = f("int32")
    isolation_level: int = f("int8", "2+")
    topics: list[ListOffsetsTopic] = f(array(ListOffsetsTopic))
    timeout_ms: int = f("int32", "10+")


@dataclass(slots=True, kw_only=True)
class ListOffsetsPartitionResponse(Struct):
    partition_index: int = f("int32")
    error_code: int = f("int16")
    timestamp: int = f("int64", "1+", default=-1)
    offset: int = f("int64", "1+", default=-1)
    leader_epoch: int = f("int32", "4+", default=-1)


@dataclass(slots=True, kw_only=True)
class ListOffsetsTopicResponse(Struct):
    name: str = f("string")
    partitions: list[ListOffsetsPartitionResponse] = f(array(ListOffsetsPartitionResponse))


@message(api_key=2, valid="1-11", flexible="6+")
@dataclass(slots=True, kw_only=True)
class ListOffsetsResponse(Struct):
    throttle_time_ms: int = f("int32", "2+", ignorable=True)
    topics: list[ListOffsetsTopicResponse] = f(array(ListOffsetsTopicResponse))
