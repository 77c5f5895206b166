"""Which topics a consumer group subscribes to (for offset expiry and OffsetDelete).

Like Kafka, only the version-0 prefix of each member's ConsumerProtocolSubscription is read
(int16 version, then topics and user data): every later version appends to it (spec 7).
"""

from __future__ import annotations

import struct

from .group import ClassicGroup

CONSUMER_PROTOCOL_TYPE = "consumer"

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def parse_subscription_topics(data: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription; ValueError if it cannot be parsed."""
    try:
        (version,) = _INT16.unpack_from(data, 0)
        if version < 0:
            raise ValueError(f"negative subscription version {version}")
        (count,) = _INT32.unpack_from(data, 2)
        if count < 0 or count > len(data):
            raise ValueError(f"bad topic count {count}")
        pos = 6
        topics = []
        for _ in range(count):
            (length,) = _INT16.unpack_from(data, pos)
            pos += 2
            if length < 0 or pos + length > len(data):
                raise ValueError("truncated topic name")
            topics.append(data[pos : pos + length].decode("utf-8"))
            pos += length
        (user_data,) = _INT32.unpack_from(data, pos)  # nullable bytes: -1 is null
        if user_data < -1 or pos + 4 + max(user_data, 0) > len(data):
            raise ValueError("truncated user data")
        return topics
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(str(e)) from e


def subscribed_topics(g: ClassicGroup) -> frozenset[str] | None:
    """Kafka's ``computeSubscribedTopics``: None when unknown (not a consumer group, no
    protocol yet, or some member's metadata does not parse)."""
    if g.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not g.members:
        return frozenset()
    if g.protocol_name is None:
        return None
    topics: set[str] = set()
    for m in g.members.values():
        try:
            topics.update(parse_subscription_topics(m.metadata_for(g.protocol_name)))
        except ValueError:
            return None
    return frozenset(topics)


def is_subscribed_to_topic(g: ClassicGroup, topic: str) -> bool:
    """Unknown subscriptions count as "subscribed to everything" for consumer groups."""
    if g.subscribed_topics is None:
        return g.protocol_type == CONSUMER_PROTOCOL_TYPE
    return topic in g.subscribed_topics
