"""Which topics a consumer group subscribes to (for offset expiry and OffsetDelete).

Like Kafka, only the version-0 prefix of each member's ConsumerProtocolSubscription is read
(``protocol.consumer.subscription_topics``): every later version appends to it (spec 7).
"""

from __future__ import annotations

from protocol.consumer import CONSUMER_PROTOCOL_TYPE, subscription_topics
from protocol.errors import DecodeError

from .group import ClassicGroup

__all__ = ["CONSUMER_PROTOCOL_TYPE", "is_subscribed_to_topic", "subscribed_topics"]


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
    # Members of a group mostly send the same subscription: each distinct one is read once.
    seen: set[bytes] = set()
    for m in g.members.values():
        metadata = m.metadata_for(g.protocol_name)
        if metadata in seen:
            continue
        seen.add(metadata)
        try:
            topics.update(subscription_topics(metadata))
        except DecodeError:
            return None
    return frozenset(topics)


def is_subscribed_to_topic(g: ClassicGroup, topic: str) -> bool:
    """Unknown subscriptions count as "subscribed to everything" for consumer groups."""
    if g.subscribed_topics is None:
        return g.protocol_type == CONSUMER_PROTOCOL_TYPE
    return topic in g.subscribed_topics
