"""OffsetFetch (9): read a group's committed offsets (several groups from v8)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class OffsetFetchRequestTopic(Struct):
    name: str = f("string", "0-7")
    partition_indexes: list[int] = f(array("int32"), "0-7")


@dataclass(slots=True, kw_only=True)
class OffsetFetchRequestTopics(Struct):
    name: str = f("string", "8-9", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    partition_indexes: list[int] = f(array("int32"), "8+")


@dataclass(slots=True, kw_only=True)
class OffsetFetchRequestGroup(Struct):
    group_id: str = f("string", "8+")
    member_id: str | None = f("string", "9+", nullable="9+", default=None, ignorable=True)
    member_epoch: int = f("int32", "9+", default=-1, ignorable=True)
    topics: list[OffsetFetchRequestTopics] | None = f(
        array(OffsetFetchRequestTopics),
        "8+",
        nullable="8+",
    )


@message(api_key=9, valid="0-10", flexible="6+")
@dataclass(slots=True, kw_only=True)
class OffsetFetchRequest(Struct):
    group_id: str = f("string", "0-7")
    topics: list[OffsetFetchRequestTopic] | None = f(
        array(OffsetFetchRequestTopic),
        "0-7",
        nullable="2-7",
    )
    groups: list[OffsetFetchRequestGroup] = f(array(OffsetFetchRequestGroup), "8+")
    require_stable: bool = f("bool", "7+")


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponsePartition(Struct):
    partition_index: int = f("int32", "0-7")
    committed_offset: int = f("int64", "0-7")
    committed_leader_epoch: int = f("int32", "5-7", default=-1, ignorable=True)
    metadata: str | None = f("string", "0-7", nullable="0-7")
    error_code: int = f("int16", "0-7")


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponseTopic(Struct):
    name: str = f("string", "0-7")
    partitions: list[OffsetFetchResponsePartition] = f(array(OffsetFetchResponsePartition), "0-7")


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponsePartitions(Struct):
    partition_index: int = f("int32", "8+")
    committed_offset: int = f("int64", "8+")
    committed_leader_epoch: int = f("int32", "8+", default=-1, ignorable=True)
    metadata: str | None = f("string", "8+", nullable="8+")
    error_code: int = f("int16", "8+")


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponseTopics(Struct):
    name: str = f("string", "8-9", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    partitions: list[OffsetFetchResponsePartitions] = f(array(OffsetFetchResponsePartitions), "8+")


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponseGroup(Struct):
    group_id: str = f("string", "8+")
    topics: list[OffsetFetchResponseTopics] = f(array(OffsetFetchResponseTopics), "8+")
    error_code: int = f("int16", "8+")


@message(api_key=9, valid="0-10", flexible="6+")
@dataclass(slots=True, kw_only=True)
class OffsetFetchResponse(Struct):
    throttle_time_ms: int = f("int32", "3+", ignorable=True)
    topics: list[OffsetFetchResponseTopic] = f(array(OffsetFetchResponseTopic), "0-7")
    error_code: int = f("int16", "2-7", ignorable=True)
    groups: list[OffsetFetchResponseGroup] = f(array(OffsetFetchResponseGroup), "8+")
