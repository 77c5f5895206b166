"""LeaveGroup (13): members leave a group (batched from v3)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class LeaveGroupRequestMemberIdentity(Struct):
    member_id: str = f("string", "3+")
    group_instance_id: str | None = f("string", "3+", nullable="3+", default=None)
    reason: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)


@message(api_key=13, valid="0-5", flexible="4+")
@dataclass(slots=True, kw_only=True)
class LeaveGroupRequest(Struct):
    group_id: str = f("string")
    member_id: str = f("string", "0-2")
    members: list[LeaveGroupRequestMemberIdentity] = f(array(LeaveGroupRequestMemberIdentity), "3+")


@dataclass(slots=True, kw_only=True)
class LeaveGroupResponseMemberResponse(Struct):
    member_id: str = f("string", "3+")
    group_instance_id: str | None = f("string", "3+", nullable="3+")
    error_code: int = f("int16", "3+")


@message(api_key=13, valid="0-5", flexible="4+")
@dataclass(slots=True, kw_only=True)
class LeaveGroupResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16")
    members: list[LeaveGroupResponseMemberResponse] = f(
        array(LeaveGroupResponseMemberResponse),
        "3+",
    )
