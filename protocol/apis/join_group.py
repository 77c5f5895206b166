"""JoinGroup (11): join a classic group or rejoin it during a rebalance."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class JoinGroupRequestProtocol(Struct):
    name: str = f("string")
    metadata: bytes = f("bytes")


@message(api_key=11, valid="0-9", flexible="6+")
@dataclass(slots=True, kw_only=True)
class JoinGroupRequest(Struct):
    group_id: str = f("string")
    session_timeout_ms: int = f("int32")
    rebalance_timeout_ms: int = f("int32", "1+", default=-1, ignorable=True)
    member_id: str = f("string")
    group_instance_id: str | None = f("string", "5+", nullable="5+", default=None)
    protocol_type: str = f("string")
    protocols: list[JoinGroupRequestProtocol] = f(array(JoinGroupRequestProtocol))
    reason: str | None = f("string", "8+", nullable="8+", default=None, ignorable=True)


@dataclass(slots=True, kw_only=True)
class JoinGroupResponseMember(Struct):
    member_id: str = f("string")
    group_instance_id: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    metadata: bytes = f("bytes")


@message(api_key=11, valid="0-9", flexible="6+")
@dataclass(slots=True, kw_only=True)
class JoinGroupResponse(Struct):
    throttle_time_ms: int = f("int32", "2+", ignorable=True)
    error_code: int = f("int16")
    generation_id: int = f("int32", default=-1)
    protocol_type: str | None = f("string", "7+", nullable="7+", default=None, ignorable=True)
    protocol_name: str | None = f("string", nullable="7+")
    leader: str = f("string")
    skip_assignment: bool = f("bool", "9+")
    member_id: str = f("string")
    members: list[JoinGroupResponseMember] = f(array(JoinGroupResponseMember))
