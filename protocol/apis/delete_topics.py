"""DeleteTopics (20): forwarded to the upstream in ``serve --upstream`` (decoded only for
its topic ACLs)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class DeleteTopicState(Struct):
    name: str | None = f("string", "6+", nullable="6+", default=None)
    topic_id: uuid.UUID = f("uuid", "6+")


@message(api_key=20, valid="1-6", flexible="4+")
@dataclass(slots=True, kw_only=True)
class DeleteTopicsRequest(Struct):
    topics: list[DeleteTopicState] = f(array(DeleteTopicState), "6+")
    topic_names: list[str] = f(array("string"), "0-5", ignorable=True)
    timeout_ms: int = f("int32")


@dataclass(slots=True, kw_only=True)
class DeletableTopicResult(Struct):
    name: str | None = f("string", nullable="6+")
    topic_id: uuid.UUID = f("uuid", "6+", ignorable=True)
    error_code: int = f("int16")
    error_message: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)


@message(api_key=20, valid="1-6", flexible="4+")
@dataclass(slots=True, kw_only=True)
class DeleteTopicsResponse(Struct):
    throttle_time_ms: int = f("int32", "1+")
    responses: list[DeletableTopicResult] = f(array(DeletableTopicResult))
