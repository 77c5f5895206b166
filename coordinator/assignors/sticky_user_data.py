"""The sticky assignors' user data (inside ConsumerProtocolSubscription.UserData).

``sticky`` (eager) cannot rely on OwnedPartitions, so each member sends its previous
assignment and generation itself (Kafka's ``StickyAssignor`` schema, non-flexible encoding):

    V1: previous_assignment [ {topic string, partitions [int32]} ], generation int32
    V0: previous_assignment only

``cooperative-sticky`` sends just ``generation int32`` (it reads owned partitions and the
generation from the subscription itself when the subscription is v2+).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .base import DEFAULT_GENERATION, TopicPartition

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class MemberData:
    """Kafka's AbstractStickyAssignor.MemberData: claimed partitions and their generation."""

    partitions: list[TopicPartition]
    generation: int | None  # None: not present


class _Truncated(ValueError):
    pass


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Truncated
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def string(self) -> str:
        return self.take(self.int16()).decode("utf-8")

    def count(self) -> int:
        n = self.int32()
        if n < 0:
            raise _Truncated
        return n


def _read_previous_assignment(reader: _Reader) -> list[TopicPartition]:
    partitions: list[TopicPartition] = []
    for _ in range(reader.count()):
        topic = reader.string()
        partitions.extend((topic, reader.int32()) for _ in range(reader.count()))
    return partitions


def encode_sticky_user_data(owned: Mapping[str, Sequence[int]], generation: int) -> bytes:
    out = bytearray(_I32.pack(len(owned)))
    for topic, partitions in owned.items():
        name = topic.encode("utf-8")
        out += _I16.pack(len(name)) + name + _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p)
    out += _I32.pack(generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes | None) -> MemberData:
    """As StickyAssignor.memberData: V1, else V0, else nothing with the default generation."""
    if not data:
        return MemberData([], None)
    try:
        reader = _Reader(data)
        partitions = _read_previous_assignment(reader)
    except (_Truncated, UnicodeDecodeError):
        return MemberData([], DEFAULT_GENERATION)
    try:
        return MemberData(partitions, reader.int32())
    except _Truncated:
        return MemberData(partitions, None)  # V0


def encode_cooperative_user_data(generation: int) -> bytes:
    return _I32.pack(generation)


def decode_cooperative_generation(data: bytes | None) -> int | None:
    """CooperativeStickyAssignor's fallback for subscriptions older than v2."""
    if data is None:
        return None
    if len(data) < 4:
        return DEFAULT_GENERATION
    return int(_I32.unpack_from(data)[0])
