"""OffsetDelete (47): delete a group's committed offsets for some partitions."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class OffsetDeleteRequestPartition(Struct):
    partition_index: int = f("int32")


@dataclass(slots=True, kw_only=True)
class OffsetDeleteRequestTopic(Struct):
    name: str = f("string")
    partitions: list[OffsetDeleteRequestPartition] = f(array(OffsetDeleteRequestPartition))


@message(api_key=47, valid="0", flexible="none")
@dataclass(slots=True, kw_only=True)
class OffsetDeleteRequest(Struct):
    group_id: str = f("string")
    topics: list[OffsetDeleteRequestTopic] = f(array(OffsetDeleteRequestTopic))


@dataclass(slots=True, kw_only=True)
class OffsetDeleteResponsePartition(Struct):
    partition_index: int = f("int32")
    error_code: int = f("int16")


@dataclass(slots=True, kw_only=True)
class OffsetDeleteResponseTopic(Struct):
    name: str = f("string")
    partitions: list[OffsetDeleteResponsePartition] = f(array(OffsetDeleteResponsePartition))


@message(api_key=47, valid="0", flexible="none")
@dataclass(slots=True, kw_only=True)
class OffsetDeleteResponse(Struct):
    error_code: int = f("int16")
    throttle_time_ms: int = f("int32", ignorable=True)
    topics: list[OffsetDeleteResponseTopic] = f(array(OffsetDeleteResponseTopic))
