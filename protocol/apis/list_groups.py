"""ListGroups (16): every group, with state/type filters from v4/v5."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=16, valid="0-5", flexible="3+")
@dataclass(slots=True, kw_only=True)
class ListGroupsRequest(Struct):
    states_filter: list[str] = f(array("string"), "4+")
    types_filter: list[str] = f(array("string"), "5+")


@dataclass(slots=True, kw_only=True)
class ListGroupsResponseListedGroup(Struct):
    group_id: str = f("string")
    protocol_type: str = f("string")
    group_state: str = f("string", "4+", ignorable=True)
    group_type: str = f("string", "5+", ignorable=True)


@message(api_key=16, valid="0-5", flexible="3+")
@dataclass(slots=True, kw_only=True)
class ListGroupsResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16")
    groups: list[ListGroupsResponseListedGroup] = f(array(ListGroupsResponseListedGroup))
