"""OffsetCommit (8): store a group's committed offsets."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class OffsetCommitRequestPartition(Struct):
    partition_index: int = f("int32")
    committed_offset: int = f("int64")
    committed_leader_epoch: int = f("int32", "6+", default=-1, ignorable=True)
    commit_timestamp: int = f("int64", "1", default=-1)
    committed_metadata: str | None = f("string", nullable="0+")


@dataclass(slots=True, kw_only=True)
class OffsetCommitRequestTopic(Struct):
    name: str = f("string", "0-9", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    partitions: list[OffsetCommitRequestPartition] = f(array(OffsetCommitRequestPartition))


@message(api_key=8, valid="0-10", flexible="8+")
@dataclass(slots=True, kw_only=True)
class OffsetCommitRequest(Struct):
    group_id: str = f("string")
    generation_id_or_member_epoch: int = f("int32", "1+", default=-1, ignorable=True)
    member_id: str = f("string", "1+", ignorable=True)
    group_instance_id: str | None = f("string", "7+", nullable="7+", default=None)
    retention_time_ms: int = f("int64", "2-4", default=-1, ignorable=True)
    topics: list[OffsetCommitRequestTopic] = f(array(OffsetCommitRequestTopic))


@dataclass(slots=True, kw_only=True)
class OffsetCommitResponsePartition(Struct):
    partition_index: int = f("int32")
    error_code: int = f("int16")


@dataclass(slots=True, kw_only=True)
class OffsetCommitResponseTopic(Struct):
    name: str = f("string", "0-9", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    partitions: list[OffsetCommitResponsePartition] = f(array(OffsetCommitResponsePartition))


@message(api_key=8, valid="0-10", flexible="8+")
@dataclass(slots=True, kw_only=True)
class OffsetCommitResponse(Struct):
    throttle_time_ms: int = f("int32", "3+", ignorable=True)
    topics: list[OffsetCommitResponseTopic] = f(array(OffsetCommitResponseTopic))
