"""Heartbeat (12): keep a member alive and learn about rebalances."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, f, message


@message(api_key=12, valid="0-4", flexible="4+")
@dataclass(slots=True, kw_only=True)
class HeartbeatRequest(Struct):
    group_id: str = f("string")
    generation_id: int = f("int32")
    member_id: str = f("string")
    group_instance_id: str | None = f("string", "3+", nullable="3+", default=None)


@message(api_key=12, valid="0-4", flexible="4+")
@dataclass(slots=True, kw_only=True)
class HeartbeatResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16")
