"""Frame surgery: only the correlation id changes; what a forward must peek is read right."""

from __future__ import annotations

import pytest

from coordinator.upstream import wire
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.apis.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.frames import decode_request, encode_request

RECORDS = b"\x00" * 12 + b"batch bytes, never decoded"


def produce(acks: int, transactional_id: str | None = None) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=RECORDS)]
            )
        ],
    )


@pytest.mark.parametrize("version", [3, 8, 9, 11])
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_read_from_the_frame(version: int, acks: int) -> None:
    for txn in (None, "a-transactional-id"):
        frame = encode_request(produce(acks, txn), version, 7, "client-x")[4:]
        flexible = BY_KEY[ApiKey.PRODUCE].is_flexible(version)
        assert wire.produce_acks(frame, version, flexible) == acks


@pytest.mark.parametrize("version", [4, 11, 12, 14, 15, 17])
def test_fetch_max_wait_read_from_the_frame(version: int) -> None:
    body = FetchRequest(
        max_wait_ms=4321,
        min_bytes=1,
        topics=[
            FetchTopic(
                topic="t",
                partitions=[FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=100)],
            )
        ],
    )
    frame = encode_request(body, version, 7, None)[4:]
    flexible = BY_KEY[ApiKey.FETCH].is_flexible(version)
    assert wire.fetch_max_wait_ms(frame, version, flexible) == 4321


def test_readdressed_request_changes_only_the_correlation_id() -> None:
    frame = encode_request(produce(1), 9, 7, "client-x")[4:]
    sent = wire.readdressed_request(frame, 99)
    assert int.from_bytes(sent[:4], "big") == len(frame)
    again = decode_request(sent[4:])
    assert again.header.correlation_id == 99
    assert again.body == decode_request(frame).body
    assert sent[12:] == frame[8:]  # the records untouched


def test_readdressed_response_gives_the_client_its_correlation_id() -> None:
    upstream = (5).to_bytes(4, "big") + b"\x00body"
    out = wire.readdressed_response(upstream, 1234)
    assert out == len(upstream).to_bytes(4, "big") + (1234).to_bytes(4, "big") + b"\x00body"
    assert wire.response_correlation(upstream) == 5
