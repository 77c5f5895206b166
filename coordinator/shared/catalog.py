"""The virtual topic catalog: topics that have partitions but hold no records.

Consumers need topic metadata, offsets and fetches to run their poll loop once assigned;
virtual topics answer all three as an empty log (earliest = latest = 0).

Topic ids look random, as Kafka's are: each is a keyed hash (HMAC-SHA256) of the name
under a random key the store keeps (made once per installation, shared by the nodes of a
cluster), so they are stable across restarts and agree between nodes without a word,
while nobody without the key can tell a guessed name's id. Topics stored before the key
existed keep the id they had (UUIDv5 of the name), and so does every topic when the store
keeps no key (``--store memory``, and tests).
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterable
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
    """The id of a topic stored before ids were keyed (and of every topic without a key)."""
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, name)


def keyed_topic_id(key: bytes, name: str) -> uuid.UUID:
    digest = hmac.new(key, name.encode(), hashlib.sha256).digest()
    return uuid.UUID(bytes=digest[:16], version=4)


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    return 0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _LEGAL


class Catalog:
    def __init__(self) -> None:
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._id_key: bytes | None = None
        self._unkeyed: frozenset[str] = frozenset()
        #: Counts changes to the topics (what remembered Metadata answers check).
        self.changes = 0

    def use_id_key(self, key: bytes | None, unkeyed: Iterable[str] = ()) -> None:
        """The store's topic id key, and the topics stored before it (they keep their
        UUIDv5 ids); before any topic is created."""
        self._id_key = key
        self._unkeyed = frozenset(unkeyed)
        self.changes += 1

    def live_by_name(self) -> dict[str, Topic]:
        """The catalog's own name -> topic dict (cleared and refilled, never replaced), for
        readers that must see every change without a call per lookup (the compiled
        heartbeat lane, which reads the partition counts a steady heartbeat compares).
        Not to be written."""
        return self._by_name

    def id_for(self, name: str) -> uuid.UUID:
        """The id topic ``name`` has, or would have once created."""
        topic = self._by_name.get(name)
        if topic is not None:
            return topic.topic_id  # a mirrored topic's id is its source's
        if self._id_key is None or name in self._unkeyed:
            return topic_id_for(name)
        return keyed_topic_id(self._id_key, name)

    def create(self, name: str, partitions: int) -> Topic:
        if name in self._by_name:
            raise KeyError(name)
        topic = Topic(name, partitions, self.id_for(name))
        self.changes += 1
        self._by_name[name] = topic
        self._by_id[topic.topic_id] = topic
        return topic

    def grow(self, name: str, partitions: int) -> Topic:
        """More partitions for a topic (Kafka can add partitions, never remove them)."""
        old = self._by_name[name]
        if partitions < old.partitions:
            raise ValueError(f"{name} has {old.partitions} partitions; they cannot shrink")
        topic = Topic(name, partitions, old.topic_id)
        self.changes += 1
        self._by_name[name] = self._by_id[old.topic_id] = topic
        return topic

    def mirror(self, topics: Iterable[Topic], complete: bool = True) -> None:
        """Topics of an outside source with their own ids (the upstream's Metadata, in
        ``serve --upstream``): each replaces the topic of its name; ``complete``: they
        are all the topics there are, the others are gone."""
        if complete:
            self._by_name.clear()
            self._by_id.clear()
        for topic in topics:
            old = self._by_name.get(topic.name)
            if old is not None:
                self._by_id.pop(old.topic_id, None)
            self._by_name[topic.name] = topic
            self._by_id[topic.topic_id] = topic

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
