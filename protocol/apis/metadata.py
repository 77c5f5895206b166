"""Metadata (3): brokers and topics; clients bootstrap with it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class MetadataRequestTopic(Struct):
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    name: str | None = f("string", nullable="10+")


@message(api_key=3, valid="0-13", flexible="9+")
@dataclass(slots=True, kw_only=True)
class MetadataRequest(Struct):
    topics: list[MetadataRequestTopic] | None = f(array(MetadataRequestTopic), nullable="1+")
    allow_auto_topic_creation: bool = f("bool", "4+", default=True)
    include_cluster_authorized_operations: bool = f("bool", "8-10")
    include_topic_authorized_operations: bool = f("bool", "8+")


@dataclass(slots=True, kw_only=True)
class MetadataResponseBroker(Struct):
    node_id: int = f("int32")
    host: str = f("string")
    port: int = f("int32")
    rack: str | None = f("string", "1+", nullable="1+", default=None, ignorable=True)


@dataclass(slots=True, kw_only=True)
class MetadataResponsePartition(Struct):
    error_code: int = f("int16")
    partition_index: int = f("int32")
    leader_id: int = f("int32")
    leader_epoch: int = f("int32", "7+", default=-1, ignorable=True)
    replica_nodes: list[int] = f(array("int32"))
    isr_nodes: list[int] = f(array("int32"))
    offline_replicas: list[int] = f(array("int32"), "5+", ignorable=True)


@dataclass(slots=True, kw_only=True)
class MetadataResponseTopic(Struct):
    error_code: int = f("int16")
    name: str | None = f("string", nullable="12+")
    topic_id: uuid.UUID = f("uuid", "10+", ignorable=True)
    is_internal: bool = f("bool", "1+", ignorable=True)
    partitions: list[MetadataResponsePartition] = f(array(MetadataResponsePartition))
    topic_authorized_operations: int = f("int32", "8+", default=-2147483648)


@message(api_key=3, valid="0-13", flexible="9+")
@dataclass(slots=True, kw_only=True)
class MetadataResponse(Struct):
    throttle_time_ms: int = f("int32", "3+", ignorable=True)
    brokers: list[MetadataResponseBroker] = f(array(MetadataResponseBroker))
    cluster_id: str | None = f("string", "2+", nullable="2+", default=None, ignorable=True)
    controller_id: int = f("int32", "1+", default=-1, ignorable=True)
    topics: list[MetadataResponseTopic] = f(array(MetadataResponseTopic))
    cluster_authorized_operations: int = f("int32", "8-10", default=-2147483648)
    error_code: int = f("int16", "13+")
