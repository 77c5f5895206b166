"""Groups are placed on coordinator partitions as Kafka places them. The expected values
were printed by Java 17 (``String.hashCode``, then Kafka's ``Utils.abs`` modulo 50)."""

from __future__ import annotations

import pytest

from coordinator.cluster.placement import java_string_hash, kafka_abs, partition_for

JAVA = [
    ("my-group", -1906497762, 12),
    ("test-group", 627841412, 12),
    ("console-consumer-12345", 158455506, 6),
    ("orders", -1008770331, 31),
    ("", 0, 0),
    ("polygenelubricants", -(2**31), 0),  # hashCode is Integer.MIN_VALUE
    ("grüße", 98768023, 23),
    ("😀-group", -1198440043, 43),  # a surrogate pair: two UTF-16 code units
]


@pytest.mark.parametrize(("group_id", "hash_code", "partition"), JAVA)
def test_a_group_lands_on_the_partition_kafka_gives_it(group_id, hash_code, partition):
    assert java_string_hash(group_id) == hash_code
    assert partition_for(group_id, 50) == partition


def test_kafka_abs_maps_the_smallest_int_to_zero():
    assert kafka_abs(-(2**31)) == 0 and kafka_abs(-5) == 5
