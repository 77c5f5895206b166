"""Between assignors and the ConsumerProtocol bytes of JoinGroup and SyncGroup (spec 7).

A member announces one subscription per assignor it supports (same topics, owned partitions
and generation; user data per assignor); the leader decodes every member's metadata into a
:class:`Subscription`, assigns, and encodes one ConsumerProtocolAssignment per member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.consumer import (
    MAX_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from .base import DEFAULT_GENERATION, Assignor, Subscription
from .java_order import java_key


def _topic_partitions(partitions: Mapping[str, Sequence[int]]) -> list[TopicPartition]:
    return [
        TopicPartition(topic=t, partitions=sorted(ps))
        for t, ps in sorted(partitions.items(), key=lambda item: java_key(item[0]))
        if ps
    ]


class _Unset:
    pass


_SAME_AS_OWNED = _Unset()


def subscription_bytes(
    assignor: Assignor,
    topics: Sequence[str],
    *,
    owned: Mapping[str, Sequence[int]] | None = None,
    generation_id: int = DEFAULT_GENERATION,
    rack_id: str | None = None,
    last_assignment: Mapping[str, Sequence[int]] | _Unset | None = _SAME_AS_OWNED,
    last_generation: int | None = None,
    version: int = MAX_VERSION,
) -> bytes:
    """The JoinGroup protocol metadata for ``assignor``, as a Java 3.x/4.x consumer writes it
    (topics sorted, owned partitions sorted by topic then partition).

    ``owned``/``generation_id`` are what the member owns now and its current generation (-1
    when reset); the assignor's user data is built from ``last_assignment`` (None: never
    assigned) and ``last_generation``, which default to them."""
    history = owned if isinstance(last_assignment, _Unset) else last_assignment
    history_generation = generation_id if last_generation is None else last_generation
    sub = ConsumerProtocolSubscription(
        topics=sorted(set(topics), key=java_key),
        user_data=assignor.subscription_user_data(history, history_generation),
        owned_partitions=_topic_partitions(owned or {}),
        generation_id=generation_id,
        rack_id=rack_id,
    )
    return encode_subscription(sub, version)


def decode_member_subscription(metadata: bytes, group_instance_id: str | None) -> Subscription:
    """A JoinGroup response member's metadata as an assignor input (raises DecodeError)."""
    _, sub = decode_subscription(metadata)
    return Subscription(
        topics=list(sub.topics),
        owned_partitions={tp.topic: list(tp.partitions) for tp in sub.owned_partitions},
        generation_id=sub.generation_id,
        user_data=sub.user_data,
        rack_id=sub.rack_id or None,
        group_instance_id=group_instance_id,
    )


def assignment_bytes(
    partitions: Mapping[str, Sequence[int]],
    user_data: bytes | None = None,
    version: int = MAX_VERSION,
) -> bytes:
    """A SyncGroup assignment for one member."""
    body = ConsumerProtocolAssignment(
        assigned_partitions=_topic_partitions(partitions), user_data=user_data
    )
    return encode_assignment(body, version)


def decode_member_assignment(data: bytes) -> dict[str, list[int]]:
    """The partitions in a SyncGroup assignment; empty bytes mean no assignment."""
    if not data:
        return {}
    _, body = decode_assignment(data)
    out: dict[str, list[int]] = {}
    for tp in body.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return {t: sorted(set(ps)) for t, ps in out.items()}
