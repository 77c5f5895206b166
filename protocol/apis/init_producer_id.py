"""InitProducerId (22): an idempotent producer's id, forwarded to the upstream in
``serve --upstream``; a transactional one is refused (docs/upstream.md)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, f, message


@message(api_key=22, valid="0-4", flexible="2+")
@dataclass(slots=True, kw_only=True)
class InitProducerIdRequest(Struct):
    transactional_id: str | None = f("string", nullable="0+")
    transaction_timeout_ms: int = f("int32")
    producer_id: int = f("int64", "3+", default=-1)
    producer_epoch: int = f("int16", "3+", default=-1)


@message(api_key=22, valid="0-4", flexible="2+")
@dataclass(slots=True, kw_only=True)
class InitProducerIdResponse(Struct):
    throttle_time_ms: int = f("int32")
    error_code: int = f("int16")
    producer_id: int = f("int64", default=-1)
    producer_epoch: int = f("int16")
