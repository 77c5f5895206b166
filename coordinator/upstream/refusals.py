"""Answers the daemon makes itself to a request meant for the upstream, sans-IO: every
topic and partition it names gets an error code (the upstream is down or slow, or a topic
ACL refuses it). Each answer has the shape of the API's response at any version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.apis import ApiKey
from protocol.apis.create_topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.apis.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.apis.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.apis.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    FetchResponsePartitionData,
)
from protocol.apis.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.apis.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataResponseTopic
from protocol.apis.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from protocol.schema import Struct

#: An entry's code: given the request's topic (or resource) entry.
CodeOf = Callable[[Any], int]


def refusal(key: int, body: Struct, code: int | CodeOf, message: str | None = None) -> Struct:
    """The response to ``body`` (a request of API ``key``) with every topic refused with
    ``code`` (a constant, or one per topic entry)."""
    code_of: CodeOf = code if callable(code) else (lambda _entry: code)
    return _BUILDERS[key](body, code_of, message)


def _produce(body: ProduceRequest, code_of: CodeOf, message: str | None) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    PartitionProduceResponse(
                        index=p.index, error_code=code_of(t), base_offset=-1, error_message=message
                    )
                    for p in t.partition_data
                ],
            )
            for t in body.topic_data
        ]
    )


def _fetch(body: FetchRequest, code_of: CodeOf, message: str | None) -> FetchResponse:
    # Sessionless (0): the client's next fetch is a full one, which the upstream serves.
    return FetchResponse(
        error_code=0,
        session_id=0,
        responses=[
            FetchableTopicResponse(
                topic=t.topic,
                topic_id=t.topic_id,
                partitions=[
                    FetchResponsePartitionData(
                        partition_index=p.partition,
                        error_code=code_of(t),
                        high_watermark=-1,
                        last_stable_offset=-1,
                        log_start_offset=-1,
                        aborted_transactions=None,
                        records=b"",
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )


def _list_offsets(
    body: ListOffsetsRequest, code_of: CodeOf, message: str | None
) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=[
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=code_of(t)
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ]
    )


def _metadata(body: MetadataRequest, code_of: CodeOf, message: str | None) -> MetadataResponse:
    return MetadataResponse(
        topics=[
            MetadataResponseTopic(
                error_code=code_of(t), name=t.name, topic_id=t.topic_id, partitions=[]
            )
            for t in body.topics or ()
        ]
    )


def _create_topics(
    body: CreateTopicsRequest, code_of: CodeOf, message: str | None
) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[
            CreateTopicsResponseCreatableTopicResult(
                name=t.name, error_code=code_of(t), error_message=message, configs=None
            )
            for t in body.topics
        ]
    )


def _delete_topics(
    body: DeleteTopicsRequest, code_of: CodeOf, message: str | None
) -> DeleteTopicsResponse:
    if body.topics:  # v6+
        results = [
            DeletableTopicResult(
                name=t.name, topic_id=t.topic_id, error_code=code_of(t), error_message=message
            )
            for t in body.topics
        ]
    else:
        results = [
            DeletableTopicResult(name=name, error_code=code_of(name), error_message=message)
            for name in body.topic_names
        ]
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


def _describe_configs(
    body: DescribeConfigsRequest, code_of: CodeOf, message: str | None
) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(
        throttle_time_ms=0,
        results=[
            DescribeConfigsResult(
                error_code=code_of(r),
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[],
            )
            for r in body.resources
        ],
    )


def _init_producer_id(
    body: InitProducerIdRequest, code_of: CodeOf, message: str | None
) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=code_of(body), producer_id=-1, producer_epoch=-1
    )


_BUILDERS: dict[int, Callable[[Any, CodeOf, str | None], Struct]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
}
