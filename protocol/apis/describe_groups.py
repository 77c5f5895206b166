"""DescribeGroups (15): state, protocol and members of groups."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=15, valid="0-6", flexible="5+")
@dataclass(slots=True, kw_only=True)
class DescribeGroupsRequest(Struct):
    groups: list[str] = f(array("string"))
    include_authorized_operations: bool = f("bool", "3+")


@dataclass(slots=True, kw_only=True)
class DescribeGroupsResponseDescribedGroupMember(Struct):
    member_id: str = f("string")
    group_instance_id: str | None = f("string", "4+", nullable="4+", default=None, ignorable=True)
    client_id: str = f("string")
    client_host: str = f("string")
    member_metadata: bytes = f("bytes")
    member_assignment: bytes = f("bytes")


@dataclass(slots=True, kw_only=True)
class DescribeGroupsResponseDescribedGroup(Struct):
    error_code: int = f("int16")
    error_message: str | None = f("string", "6+", nullable="6+", default=None, ignorable=True)
    group_id: str = f("string")
    group_state: str = f("string")
    protocol_type: str = f("string")
    protocol_data: str = f("string")
    members: list[DescribeGroupsResponseDescribedGroupMember] = f(
        array(DescribeGroupsResponseDescribedGroupMember),
    )
    authorized_operations: int = f("int32", "3+", default=-2147483648)


@message(api_key=15, valid="0-6", flexible="5+")
@dataclass(slots=True, kw_only=True)
class DescribeGroupsResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    groups: list[DescribeGroupsResponseDescribedGroup] = f(
        array(DescribeGroupsResponseDescribedGroup),
    )
