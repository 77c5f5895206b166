"""Which coordinator partition a group belongs to, exactly as Kafka places it:
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``."""

from __future__ import annotations

#: offsets.topic.num.partitions: Kafka's default.
DEFAULT_PARTITIONS = 50

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: Integer.MIN_VALUE maps to 0, not to itself."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    return kafka_abs(java_string_hash(group_id)) % partitions
