"""Java's orderings, so tie-breaks come out as in Kafka's Java assignors.

* ``java_key``: ``String.compareTo`` compares UTF-16 code units; Python compares code points.
  They differ only when a non-BMP character meets one in U+E000..U+FFFF, so the key is the
  string itself unless it holds a non-BMP character.
* ``java_hash_order``: the iteration order of a ``java.util.HashMap``/``HashSet`` of strings
  built by inserting keys one by one into ``new HashMap<>()``: by bucket
  (``(h ^ h >>> 16) & (capacity - 1)``), then by insertion order within a bucket. Kafka's
  assignors iterate such maps (member ids, partitions) and the order decides some ties.
* ``JavaHashSet``: the same for a set that also shrinks (the sticky assignor's partition
  movements), keyed by ``TopicPartition.hashCode``.

Bins that Java turns into trees (9+ keys in one bucket of a table of 64+) are ordered as
lists here; that needs 9 colliding keys, so the difference is theoretical.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=65536)
def java_key(s: str) -> str:
    """A sort key that orders strings as Java's ``String.compareTo`` does."""
    if s.isascii() or max(s) < "\U00010000":
        return s
    units = s.encode("utf-16-be", "surrogatepass")
    return "".join(chr(int.from_bytes(units[i : i + 2], "big")) for i in range(0, len(units), 2))


@lru_cache(maxsize=65536)
def java_string_hash(s: str) -> int:
    """``String.hashCode()``: 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return _int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()``."""
    return _int32(31 * (31 + partition) + java_string_hash(topic))


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashSet(Generic[K]):
    """Membership plus Java ``HashSet`` iteration order (see the module docstring)."""

    def __init__(self, hash_of: Callable[[K], int]) -> None:
        self._hash_of = hash_of
        self._capacity = _INITIAL_CAPACITY
        self._seq = 0
        self._items: dict[K, tuple[int, int]] = {}  # key -> (spread hash, insertion seq)
        self._bucket_sizes: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _resize(self) -> None:
        self._capacity *= 2
        self._bucket_sizes = {}
        for spread, _ in self._items.values():
            bucket = spread & (self._capacity - 1)
            self._bucket_sizes[bucket] = self._bucket_sizes.get(bucket, 0) + 1

    def add(self, key: K) -> None:
        if key in self._items:
            return
        spread = _spread(self._hash_of(key))
        bucket = spread & (self._capacity - 1)
        in_bucket = self._bucket_sizes.get(bucket, 0)
        self._items[key] = (spread, self._seq)
        self._seq += 1
        self._bucket_sizes[bucket] = in_bucket + 1
        # HashMap.putVal: a bin that reaches 9 nodes in a small table doubles the table.
        if in_bucket >= _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._resize()
        if len(self._items) > self._capacity * _LOAD_FACTOR:
            self._resize()

    def discard(self, key: K) -> None:
        entry = self._items.pop(key, None)
        if entry is not None:
            bucket = entry[0] & (self._capacity - 1)
            self._bucket_sizes[bucket] -= 1

    def ordered(self) -> list[K]:
        mask = self._capacity - 1
        return sorted(self._items, key=lambda k: (self._items[k][0] & mask, self._items[k][1]))

    def first(self) -> K:
        mask = self._capacity - 1
        return min(self._items, key=lambda k: (self._items[k][0] & mask, self._items[k][1]))


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a ``HashMap<String, ...>`` filled with ``keys`` in this order."""
    table: JavaHashSet[str] = JavaHashSet(java_string_hash)
    for key in keys:
        table.add(key)
    return table.ordered()
