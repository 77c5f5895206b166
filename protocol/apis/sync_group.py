"""SyncGroup (14): the leader hands out assignments; every member receives its own."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class SyncGroupRequestAssignment(Struct):
    member_id: str = f("string")
    assignment: bytes = f("bytes")


@message(api_key=14, valid="0-5", flexible="4+")
@dataclass(slots=True, kw_only=True)
class SyncGroupRequest(Struct):
    group_id: str = f("string")
    generation_id: int = f("int32")
    member_id: str = f("string")
    group_instance_id: str | None = f("string", "3+", nullable="3+", default=None)
    protocol_type: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    assignments: list[SyncGroupRequestAssignment] = f(array(SyncGroupRequestAssignment))


@message(api_key=14, valid="0-5", flexible="4+")
@dataclass(slots=True, kw_only=True)
class SyncGroupResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16")
    protocol_type: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    assignment: bytes = f("bytes")
