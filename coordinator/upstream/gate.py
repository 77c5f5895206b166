"""Topic ACLs in front of the upstream, sans-IO: which topics of a forwarded request the
client may touch. The permitted part is forwarded, the rest is answered by the daemon
(TOPIC_AUTHORIZATION_FAILED, as Kafka answers each topic it refuses)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.apis import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct

from ..shared.accounts import Operation

#: DescribeConfigs resource types (not the ACL ones): a topic's, a broker's.
CONFIG_TOPIC = 2
CONFIG_GROUP = 32


@dataclass(frozen=True, slots=True)
class Shape:
    """Where an API's request lists its topics and its response answers them."""

    request_list: str
    response_list: str
    operation: Operation


SHAPES: dict[int, Shape] = {
    ApiKey.PRODUCE: Shape("topic_data", "responses", Operation.WRITE),
    ApiKey.FETCH: Shape("topics", "responses", Operation.READ),
    ApiKey.LIST_OFFSETS: Shape("topics", "topics", Operation.DESCRIBE),
    ApiKey.METADATA: Shape("topics", "topics", Operation.DESCRIBE),
    ApiKey.CREATE_TOPICS: Shape("topics", "topics", Operation.CREATE),
    ApiKey.DELETE_TOPICS: Shape("topics", "responses", Operation.DELETE),
    ApiKey.DESCRIBE_CONFIGS: Shape("resources", "results", Operation.DESCRIBE_CONFIGS),
}

#: (operation, topic name) -> whether the client may.
May = Callable[[Operation, str], bool]
#: A topic id -> its name (Fetch v13+ names topics by id only).
NameOf = Callable[[uuid.UUID], str | None]


@dataclass(slots=True)
class Split:
    """A request cut in two: ``forward`` (None: nothing left to forward) and the refused
    entries with their codes."""

    forward: Struct | None
    refused: list[tuple[Any, int]]


def split(key: int, version: int, body: Struct, may: May, name_of: NameOf) -> Split:
    """The part of ``body`` the client may send upstream and the entries it may not."""
    shape = SHAPES[key]
    list_name = shape.request_list
    if key == ApiKey.DELETE_TOPICS and version < 6:
        list_name = "topic_names"
    entries = getattr(body, list_name) or []
    allowed, refused = [], []
    for entry in entries:
        code = _code(key, shape, entry, may, name_of)
        if code is None:
            allowed.append(entry)
        else:
            refused.append((entry, code))
    if not refused:
        return Split(body, [])
    if not allowed and not (key == ApiKey.FETCH and body.forgotten_topics_data):  # type: ignore[attr-defined]
        return Split(None, refused)
    forward = copy.copy(body)
    setattr(forward, list_name, allowed)
    return Split(forward, refused)


def _code(key: int, shape: Shape, entry: Any, may: May, name_of: NameOf) -> int | None:
    if key == ApiKey.DESCRIBE_CONFIGS:
        if entry.resource_type != CONFIG_TOPIC:
            return None  # a broker's configs: no topic to check
        name = entry.resource_name
    elif isinstance(entry, str):  # DeleteTopics < v6
        name = entry
    else:
        name = getattr(entry, "name", None) or getattr(entry, "topic", None)
        if not name:
            topic_id = getattr(entry, "topic_id", None)
            name = name_of(topic_id) if topic_id is not None else None
            if name is None:
                return ErrorCode.UNKNOWN_TOPIC_ID
    return None if may(shape.operation, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED


def refused_part(key: int, version: int, body: Struct, cut: Split) -> Struct:
    """``body`` with only the entries ``cut`` refused: what the daemon answers itself."""
    list_name = SHAPES[key].request_list
    if key == ApiKey.DELETE_TOPICS and version < 6:
        list_name = "topic_names"
    part = copy.copy(body)
    setattr(part, list_name, [entry for entry, _code in cut.refused])
    return part


def merged(key: int, answer: Struct | None, refusal: Struct) -> Struct:
    """The upstream's ``answer`` to the forwarded part with the refused entries added."""
    if answer is None:
        return refusal
    name = SHAPES[key].response_list
    getattr(answer, name).extend(getattr(refusal, name))
    return answer
