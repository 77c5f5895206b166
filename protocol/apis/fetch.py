"""Fetch (1): read records; virtual topics answer with empty record sets."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class FetchPartition(Struct):
    partition: int = f("int32")
    current_leader_epoch: int = f("int32", "9+", default=-1, ignorable=True)
    fetch_offset: int = f("int64")
    last_fetched_epoch: int = f("int32", "12+", default=-1)
    log_start_offset: int = f("int64", "5+", default=-1, ignorable=True)
    partition_max_bytes: int = f("int32")
    replica_directory_id: uuid.UUID = f("uuid", "17+", tag=0, tagged="17+", ignorable=True)
    #: v18: the high watermark a follower knows (int64 max: not supported, as consumers send).
    high_watermark: int = f("int64", "18+", default=2**63 - 1, tag=1, tagged="18+", ignorable=True)


@dataclass(slots=True, kw_only=True)
class FetchTopic(Struct):
    topic: str = f("string", "0-12", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "13+", ignorable=True)
    partitions: list[FetchPartition] = f(array(FetchPartition))


@dataclass(slots=True, kw_only=True)
class FetchRequestForgottenTopic(Struct):
    topic: str = f("string", "7-12", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "13+", ignorable=True)
    partitions: list[int] = f(array("int32"), "7+")


@dataclass(slots=True, kw_only=True)
class FetchRequestReplicaState(Struct):
    replica_id: int = f("int32", "15+", default=-1)
    replica_epoch: int = f("int64", "15+", default=-1)


@message(api_key=1, valid="0-18", flexible="12+")
@dataclass(slots=True, kw_only=True)
class FetchRequest(Struct):
    cluster_id: str | None = f(
        "string",
        "12+",
        nullable="12+",
        default=None,
        tag=0,
        tagged="12+",
        ignorable=True,
    )
    replica_id: int = f("int32", "0-14", default=-1)
    replica_state: FetchRequestReplicaState = f(
        FetchRequestReplicaState, "15+", tag=1, tagged="15+", ignorable=True
    )
    max_wait_ms: int = f("int32")
    min_bytes: int = f("int32")
    max_bytes: int = f("int32", "3+", default=2147483647, ignorable=True)
    isolation_level: int = f("int8", "4+", ignorable=True)
    session_id: int = f("int32", "7+", ignorable=True)
    session_epoch: int = f("int32", "7+", default=-1, ignorable=True)
    topics: list[FetchTopic] = f(array(FetchTopic))
    forgotten_topics_data: list[FetchRequestForgottenTopic] = f(
        array(FetchRequestForgottenTopic),
        "7+",
    )
    rack_id: str = f("string", "11+", default="", ignorable=True)


@dataclass(slots=True, kw_only=True)
class FetchResponseEpochEndOffset(Struct):
    epoch: int = f("int32", "12+", default=-1)
    end_offset: int = f("int64", "12+", default=-1)


@dataclass(slots=True, kw_only=True)
class FetchResponseLeaderIdAndEpoch(Struct):
    leader_id: int = f("int32", "12+", default=-1)
    leader_epoch: int = f("int32", "12+", default=-1)


@dataclass(slots=True, kw_only=True)
class FetchResponseSnapshotId(Struct):
    end_offset: int = f("int64", default=-1)
    epoch: int = f("int32", default=-1)


@dataclass(slots=True, kw_only=True)
class FetchResponseAbortedTransaction(Struct):
    producer_id: int = f("int64", "4+")
    first_offset: int = f("int64", "4+")


@dataclass(slots=True, kw_only=True)
class FetchResponsePartitionData(Struct):
    partition_index: int = f("int32")
    error_code: int = f("int16")
    high_watermark: int = f("int64")
    last_stable_offset: int = f("int64", "4+", default=-1, ignorable=True)
    log_start_offset: int = f("int64", "5+", default=-1, ignorable=True)
    diverging_epoch: FetchResponseEpochEndOffset = f(
        FetchResponseEpochEndOffset,
        "12+",
        tag=0,
        tagged="12+",
    )
    current_leader: FetchResponseLeaderIdAndEpoch = f(
        FetchResponseLeaderIdAndEpoch,
        "12+",
        tag=1,
        tagged="12+",
    )
    snapshot_id: FetchResponseSnapshotId = f(FetchResponseSnapshotId, "12+", tag=2, tagged="12+")
    aborted_transactions: list[FetchResponseAbortedTransaction] | None = f(
        array(FetchResponseAbortedTransaction),
        "4+",
        nullable="4+",
        ignorable=True,
    )
    preferred_read_replica: int = f("int32", "11+", default=-1)
    records: bytes | None = f("records", nullable="0+")


@dataclass(slots=True, kw_only=True)
class FetchableTopicResponse(Struct):
    topic: str = f("string", "0-12", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "13+", ignorable=True)
    partitions: list[FetchResponsePartitionData] = f(array(FetchResponsePartitionData))


@dataclass(slots=True, kw_only=True)
class FetchResponseNodeEndpoint(Struct):
    node_id: int = f("int32", "16+")
    host: str = f("string", "16+")
    port: int = f("int32", "16+")
    rack: str | None = f("string", "16+", nullable="16+", default=None)


@message(api_key=1, valid="0-18", flexible="12+")
@dataclass(slots=True, kw_only=True)
class FetchResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16", "7+", ignorable=True)
    session_id: int = f("int32", "7+")
    responses: list[FetchableTopicResponse] = f(array(FetchableTopicResponse))
    node_endpoints: list[FetchResponseNodeEndpoint] = f(
        array(FetchResponseNodeEndpoint), "16+", tag=0, tagged="16+", ignorable=True
    )
