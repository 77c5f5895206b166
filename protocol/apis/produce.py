"""Produce (0): write records. Virtual topics hold none, so every partition is refused;
it is served so that clients which pick their Fetch version from Produce's (librdkafka)
negotiate a modern Fetch."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class PartitionProduceData(Struct):
    index: int = f("int32")
    records: bytes | None = f("records", nullable="0+")


@dataclass(slots=True, kw_only=True)
class TopicProduceData(Struct):
    name: str = f("string", "0-12", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "13+", ignorable=True)
    partition_data: list[PartitionProduceData] = f(array(PartitionProduceData))


@message(api_key=0, valid="3-13", flexible="9+")
@dataclass(slots=True, kw_only=True)
class ProduceRequest(Struct):
    transactional_id: str | None = f("string", "3+", nullable="3+", default=None)
    acks: int = f("int16")
    timeout_ms: int = f("int32")
    topic_data: list[TopicProduceData] = f(array(TopicProduceData))


@dataclass(slots=True, kw_only=True)
class BatchIndexAndErrorMessage(Struct):
    batch_index: int = f("int32", "8+")
    batch_index_error_message: str | None = f("string", "8+", nullable="8+", default=None)


@dataclass(slots=True, kw_only=True)
class ProduceLeaderIdAndEpoch(Struct):
    leader_id: int = f("int32", "10+", default=-1)
    leader_epoch: int = f("int32", "10+", default=-1)


@dataclass(slots=True, kw_only=True)
class PartitionProduceResponse(Struct):
    index: int = f("int32")
    error_code: int = f("int16")
    base_offset: int = f("int64")
    log_append_time_ms: int = f("int64", "2+", default=-1, ignorable=True)
    log_start_offset: int = f("int64", "5+", default=-1, ignorable=True)
    record_errors: list[BatchIndexAndErrorMessage] = f(
        array(BatchIndexAndErrorMessage), "8+", ignorable=True
    )
    error_message: str | None = f("string", "8+", nullable="8+", default=None, ignorable=True)
    current_leader: ProduceLeaderIdAndEpoch = f(ProduceLeaderIdAndEpoch, "10+", tag=0, tagged="10+")


@dataclass(slots=True, kw_only=True)
class TopicProduceResponse(Struct):
    name: str = f("string", "0-12", ignorable=True)
    topic_id: uuid.UUID = f("uuid", "13+", ignorable=True)
    partition_responses: list[PartitionProduceResponse] = f(array(PartitionProduceResponse))


@dataclass(slots=True, kw_only=True)
class ProduceNodeEndpoint(Struct):
    node_id: int = f("int32", "10+")
    host: str = f("string", "10+")
    port: int = f("int32", "10+")
    rack: str | None = f("string", "10+", nullable="10+", default=None)


@message(api_key=0, valid="3-13", flexible="9+")
@dataclass(slots=True, kw_only=True)
class ProduceResponse(Struct):
    responses: list[TopicProduceResponse] = f(array(TopicProduceResponse))
    throttle_time_ms: int = f("int32", "1+", default=0, ignorable=True)
    node_endpoints: list[ProduceNodeEndpoint] = f(
        array(ProduceNodeEndpoint), "10+", tag=0, tagged="10+", ignorable=True
    )
