"""Answers the daemon makes itself to forwarded requests, and topic ACLs cutting them."""

from __future__ import annotations

import uuid

import pytest

from coordinator.shared.accounts import Operation
from coordinator.upstream import gate
from coordinator.upstream.refusals import refusal
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.apis.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.apis.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.apis.init_producer_id import InitProducerIdRequest
from protocol.apis.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
from protocol.apis.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_response
from protocol.schema import Struct

SAMPLES: dict[int, Struct] = {
    ApiKey.PRODUCE: ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[
            TopicProduceData(name=n, partition_data=[PartitionProduceData(index=0, records=b"x")])
            for n in ("a", "b")
        ],
    ),
    ApiKey.FETCH: FetchRequest(
        max_wait_ms=1,
        min_bytes=1,
        topics=[
            FetchTopic(
                topic=n,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1)],
            )
            for n in ("a", "b")
        ],
    ),
    ApiKey.LIST_OFFSETS: ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=n, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
            )
            for n in ("a", "b")
        ],
    ),
    ApiKey.METADATA: MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in ("a", "b")]),
    ApiKey.CREATE_TOPICS: CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=n, num_partitions=1, replication_factor=1)
            for n in ("a", "b")
        ]
    ),
    ApiKey.DELETE_TOPICS: DeleteTopicsRequest(
        topics=[DeleteTopicState(name=n, topic_id=uuid.uuid4()) for n in ("a", "b")], timeout_ms=1
    ),
    ApiKey.DESCRIBE_CONFIGS: DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=2, resource_name=n) for n in ("a", "b")]
    ),
    ApiKey.INIT_PRODUCER_ID: InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1),
}


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_every_refusal_encodes_at_every_version(key: int) -> None:
    api = BY_KEY[key]
    answer = refusal(key, SAMPLES[key], ErrorCode.NOT_LEADER_OR_FOLLOWER, "upstream down")
    for version in range(api.min_version, api.max_version + 1):
        frame = encode_response(api, version, 5, answer)
        assert decode_response(api, version, frame[4:])[0] == 5


def codes(answer: Struct) -> list[int]:
    found: list[int] = []

    def walk(value: object) -> None:
        if isinstance(value, Struct):
            for name in type(value).__dataclass_fields__:
                if name == "error_code":
                    found.append(getattr(value, name))
                else:
                    walk(getattr(value, name))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(answer)
    return found


@pytest.mark.parametrize("key", sorted(set(SAMPLES) - {ApiKey.INIT_PRODUCER_ID}))
def test_acls_cut_a_request_in_what_is_forwarded_and_what_is_refused(key: int) -> None:
    asked: list[tuple[Operation, str]] = []

    def may(operation: Operation, name: str) -> bool:
        asked.append((operation, name))
        return name == "a"

    body = SAMPLES[key]
    cut = gate.split(key, BY_KEY[key].max_version, body, may, lambda _id: None)
    assert cut.forward is not None and cut.forward is not body  # the request is not changed
    forwarded = getattr(cut.forward, gate.SHAPES[key].request_list)
    assert len(forwarded) == 1
    assert [e for e, _ in cut.refused] and all(
        c == ErrorCode.TOPIC_AUTHORIZATION_FAILED for _, c in cut.refused
    )
    assert {op for op, _ in asked} == {gate.SHAPES[key].operation}
    version = BY_KEY[key].max_version
    part = gate.refused_part(key, version, body, cut)
    answer = gate.merged(
        key,
        refusal(key, cut.forward, 0),
        refusal(key, part, lambda e: ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )
    assert len(getattr(answer, gate.SHAPES[key].response_list)) == 2  # both topics answered
    assert codes(answer).count(ErrorCode.TOPIC_AUTHORIZATION_FAILED) == 1  # "b" alone refused


def test_all_permitted_forwards_the_request_as_it_came() -> None:
    body = SAMPLES[ApiKey.PRODUCE]
    cut = gate.split(ApiKey.PRODUCE, 9, body, lambda _op, _n: True, lambda _id: None)
    assert cut.forward is body and not cut.refused


def test_a_fetch_by_an_unknown_topic_id_is_refused() -> None:
    body = FetchRequest(
        max_wait_ms=1, min_bytes=1, topics=[FetchTopic(topic_id=uuid.uuid4(), partitions=[])]
    )
    cut = gate.split(ApiKey.FETCH, 13, body, lambda _op, _n: True, lambda _id: None)
    assert cut.forward is None and cut.refused[0][1] == ErrorCode.UNKNOWN_TOPIC_ID
