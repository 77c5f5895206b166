"""The virtual topic catalog: topics that have partitions but hold no records.

Consumers need topic metadata, offsets and fetches to run their poll loop once assigned;
virtual topics answer all three as an empty log (earliest = latest = 0). Topic ids are
derived from the name so they are stable across restarts and nodes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

_TOPIC_ID_NAMESPACE = uuid.UUID("8f1d2c3e-4b5a-4f60-9e7d-1a2b3c4d5e6f")
NO_TOPIC_ID = uuid.UUID(int=0)
MAX_TOPIC_NAME = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    partitions: int
    topic_id: uuid.UUID


def topic_id_for(name: str) -> uuid.UUID:
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, name)


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    return 0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _LEGAL


class Catalog:
    def __init__(self) -> None:
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}

    def create(self, name: str, partitions: int) -> Topic:
        if name in self._by_name:
            raise KeyError(name)
        topic = Topic(name, partitions, topic_id_for(name))
        self._by_name[name] = topic
        self._by_id[topic.topic_id] = topic
        return topic

    def grow(self, name: str, partitions: int) -> Topic:
        """More partitions for a topic (Kafka can add partitions, never remove them)."""
        old = self._by_name[name]
        if partitions < old.partitions:
            raise ValueError(f"{name} has {old.partitions} partitions; they cannot shrink")
        topic = Topic(name, partitions, old.topic_id)
        self._by_name[name] = self._by_id[old.topic_id] = topic
        return topic

    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def has_partition(self, name: str, partition: int) -> bool:
        topic = self._by_name.get(name)
        return topic is not None and 0 <= partition < topic.partitions

    def all(self) -> list[Topic]:
        return sorted(self._by_name.values(), key=lambda t: t.name)

    def __len__(self) -> int:
        return len(self._by_name)
