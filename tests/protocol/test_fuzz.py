"""Hostile bytes: request, response and ConsumerProtocol decoders and the frame splitter
raise only the package's DecodeError."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.apis import ALL, Api
from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import DecodeError
from protocol.frames import FrameSplitter, FrameTooLarge, decode_request, decode_response
from protocol.schema import Struct
from tests.hypothesis_profiles import examples

from .strategies import messages

CASES = [
    pytest.param(api.request, v, id=f"{api.name}Request-v{v}")
    for api in ALL
    for v in range(api.min_version, api.max_version + 1)
]
RESPONSE_CASES = [
    pytest.param(api.response, v, id=f"{api.name}Response-v{v}")
    for api in ALL
    for v in range(api.min_version, api.max_version + 1)
]


def _try_decode(cls: type[Struct], data: bytes, version: int) -> None:
    try:
        codec.decode(cls, data, version)
    except DecodeError:
        pass


def _mutate(wire: bytearray, data: st.DataObject) -> bytes:
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "extend"]))
        if kind == "flip" and wire:
            i = data.draw(st.integers(0, len(wire) - 1))
            wire[i] = data.draw(st.integers(0, 255))
        elif kind == "truncate":
            del wire[data.draw(st.integers(0, len(wire))) :]
        elif kind == "insert":
            i = data.draw(st.integers(0, len(wire)))
            wire[i:i] = data.draw(st.binary(min_size=1, max_size=6))
        else:
            wire += data.draw(st.binary(min_size=1, max_size=6))
    return bytes(wire)


@pytest.mark.parametrize(("cls", "version"), CASES)
@settings(
    max_examples=examples(25, fast=4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_mutated_requests_raise_only_decode_error(
    cls: type[Struct], version: int, data: st.DataObject
) -> None:
    wire = bytearray(codec.encode(data.draw(messages(cls, version)), version))
    _try_decode(cls, _mutate(wire, data), version)


@pytest.mark.parametrize(("cls", "version"), RESPONSE_CASES)
@settings(
    max_examples=examples(12, fast=2), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_mutated_responses_raise_only_decode_error(
    cls: type[Struct], version: int, data: st.DataObject
) -> None:
    wire = bytearray(codec.encode(data.draw(messages(cls, version)), version))
    _try_decode(cls, _mutate(wire, data), version)


@settings(max_examples=200, deadline=None)
@given(
    api=st.sampled_from(ALL),
    data=st.data(),
    tail=st.binary(max_size=64),
)
def test_random_response_frames_raise_only_decode_error(
    api: Api, data: st.DataObject, tail: bytes
) -> None:
    version = data.draw(st.integers(api.min_version, api.max_version))
    try:
        decode_response(api, version, struct.pack(">i", 1) + tail)
    except DecodeError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), version=st.integers(0, 3))
def test_mutated_consumer_protocol_payloads_raise_only_decode_error(
    data: st.DataObject, version: int
) -> None:
    sub = data.draw(messages(ConsumerProtocolSubscription, version))
    assignment = data.draw(messages(ConsumerProtocolAssignment, version))
    for wire, decode in (
        (encode_subscription(sub, version), decode_subscription),
        (encode_assignment(assignment, version), decode_assignment),
    ):
        try:
            decode(_mutate(bytearray(wire), data))
        except DecodeError:
            pass


@settings(max_examples=300, deadline=None)
@given(frame=st.binary(max_size=64))
def test_random_request_frames_raise_only_decode_error(frame: bytes) -> None:
    try:
        decode_request(frame)
    except DecodeError:
        pass


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from([a.key for a in ALL]), tail=st.binary(max_size=64))
def test_random_bodies_for_known_apis_raise_only_decode_error(key: int, tail: bytes) -> None:
    api = next(a for a in ALL if a.key == key)
    frame = struct.pack(">hhi", key, api.max_version, 1) + tail
    try:
        decode_request(frame)
    except DecodeError:
        pass


def test_oversize_varint_is_refused() -> None:
    from protocol.apis.heartbeat import HeartbeatRequest

    with pytest.raises(DecodeError, match="varint"):
        codec.decode(HeartbeatRequest, b"\xff\xff\xff\xff\xff\x01", 4)


def test_invalid_utf8_is_refused() -> None:
    from protocol.apis.heartbeat import HeartbeatRequest

    bad = b"\x00\x02\xff\xfe" + struct.pack(">i", 1) + b"\x00\x00"
    with pytest.raises(DecodeError):
        codec.decode(HeartbeatRequest, bad, 0)


def test_negative_array_count_is_refused() -> None:
    from protocol.apis.delete_groups import DeleteGroupsRequest

    with pytest.raises(DecodeError):
        codec.decode(DeleteGroupsRequest, struct.pack(">i", -2), 0)


def test_trailing_bytes_are_refused() -> None:
    from protocol.apis.heartbeat import HeartbeatResponse

    with pytest.raises(DecodeError, match="trailing"):
        codec.decode(HeartbeatResponse, b"\x00\x00\x00", 0)


def test_huge_array_count_is_refused_without_allocating() -> None:
    from protocol.apis.delete_groups import DeleteGroupsRequest

    with pytest.raises(DecodeError, match="count"):
        codec.decode(DeleteGroupsRequest, struct.pack(">i", 2**31 - 1), 0)


def test_splitter_yields_frames_across_arbitrary_chunking() -> None:
    frames = [b"a" * n for n in (0, 1, 5, 300)]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    for chunk in (1, 3, 7, len(stream)):
        splitter = FrameSplitter(1000)
        got: list[bytes] = []
        for i in range(0, len(stream), chunk):
            got += splitter.feed(stream[i : i + chunk])
        assert got == frames
        assert splitter.buffered == 0


@settings(max_examples=200, deadline=None)
@given(
    frames=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_splitter_yields_the_frames_whatever_the_reads(
    frames: list[bytes], cuts: list[int]
) -> None:
    # Reads that end on frame boundaries take a path of their own (nothing buffered).
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    splitter = FrameSplitter(1000)
    got: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        got += splitter.feed(stream[a:b])
    assert got == frames
    assert all(type(f) is bytes for f in got)
    assert splitter.buffered == 0


def test_splitter_refuses_oversize_frame_on_its_size_prefix() -> None:
    splitter = FrameSplitter(100)
    with pytest.raises(FrameTooLarge):
        splitter.feed(struct.pack(">i", 101))
    with pytest.raises(FrameTooLarge):
        FrameSplitter(100).feed(struct.pack(">i", -1))


@settings(max_examples=300, deadline=None)
@given(stream=st.binary(max_size=200), chunk=st.integers(1, 50))
def test_splitter_on_random_streams_raises_only_decode_error(stream: bytes, chunk: int) -> None:
    splitter = FrameSplitter(64)
    try:
        for i in range(0, len(stream), chunk):
            for frame in splitter.feed(stream[i : i + chunk]):
                assert len(frame) <= 64
    except DecodeError:
        pass
