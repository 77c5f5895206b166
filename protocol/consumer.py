"""ConsumerProtocol payloads carried inside JoinGroup metadata and SyncGroup assignments.

Both are ``int16 version`` followed by the struct in the non-flexible encoding (spec 7). A
payload of a newer version than we know is read with our newest layout and its trailing
bytes are ignored, as Kafka's ``ConsumerProtocol`` does (new versions only append fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeVar

from . import codec
from .errors import DecodeError
from .schema import Struct, array, f, message

CONSUMER_PROTOCOL_TYPE = "consumer"
MAX_VERSION = 3

T = TypeVar("T", bound=Struct)


@dataclass(slots=True, kw_only=True)
class TopicPartition(Struct):
    topic: str = f("string")
    partitions: list[int] = f(array("int32"))


@message(valid="0-3", flexible="none")
@dataclass(slots=True, kw_only=True)
class ConsumerProtocolSubscription(Struct):
    topics: list[str] = f(array("string"))
    user_data: bytes | None = f("bytes", nullable="0+", default=None)
    owned_partitions: list[TopicPartition] = f(array(TopicPartition), "1+", ignorable=True)
    generation_id: int = f("int32", "2+", default=-1, ignorable=True)
    rack_id: str | None = f("string", "3+", nullable="3+", default=None, ignorable=True)


@message(valid="0-3", flexible="none")
@dataclass(slots=True, kw_only=True)
class ConsumerProtocolAssignment(Struct):
    assigned_partitions: list[TopicPartition] = f(array(TopicPartition))
    user_data: bytes | None = f("bytes", nullable="0+", default=None)


def _decode_versioned(cls: type[T], data: bytes) -> tuple[int, T]:
    if len(data) < 2:
        raise DecodeError(f"{cls.__name__}: missing version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise DecodeError(f"{cls.__name__}: negative version {version}")
    obj, _ = codec.read(cls, data, 2, min(version, MAX_VERSION))
    return version, obj


def _encode_versioned(obj: Struct, version: int) -> bytes:
    w = bytearray(struct.pack(">h", version))
    codec.write(obj, version, w)
    return bytes(w)


def decode_subscription(data: bytes) -> tuple[int, ConsumerProtocolSubscription]:
    """(version written by the member, subscription)."""
    return _decode_versioned(ConsumerProtocolSubscription, data)


def subscription_topics(data: bytes) -> list[str]:
    """The topics of a subscription of any version, read from its version-0 prefix (every
    later version appends to it), as Kafka's coordinator does. Raises DecodeError."""
    if len(data) < 2:
        raise DecodeError("ConsumerProtocolSubscription: missing version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise DecodeError(f"ConsumerProtocolSubscription: negative version {version}")
    prefix, _ = codec.read(ConsumerProtocolSubscription, data, 2, 0)
    return prefix.topics


def encode_subscription(sub: ConsumerProtocolSubscription, version: int = MAX_VERSION) -> bytes:
    return _encode_versioned(sub, version)


def decode_assignment(data: bytes) -> tuple[int, ConsumerProtocolAssignment]:
    return _decode_versioned(ConsumerProtocolAssignment, data)


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int = MAX_VERSION) -> bytes:
    return _encode_versioned(assignment, version)
