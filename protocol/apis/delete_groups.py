"""DeleteGroups (42): delete empty groups and their offsets."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=42, valid="0-3", flexible="2+")
@dataclass(slots=True, kw_only=True)
class DeleteGroupsRequest(Struct):
    groups_names: list[str] = f(array("string"))


@dataclass(slots=True, kw_only=True)
class DeleteGroupsResponseDeletableGroupResult(Struct):
    group_id: str = f("string")
    error_code: int = f("int16")
    #: v3: why the group was not deleted, or null.
    error_message: str | None = f("string", "3+", nullable="3+", default=None, ignorable=True)


@message(api_key=42, valid="0-3", flexible="2+")
@dataclass(slots=True, kw_only=True)
class DeleteGroupsResponse(Struct):
    throttle_time_ms: int = f("int32")
    results: list[DeleteGroupsResponseDeletableGroupResult] = f(
        array(DeleteGroupsResponseDeletableGroupResult),
    )
