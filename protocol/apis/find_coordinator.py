"""FindCoordinator (10): which node coordinates a group (batched keys from v4)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=10, valid="0-6", flexible="3+")
@dataclass(slots=True, kw_only=True)
class FindCoordinatorRequest(Struct):
    key: str = f("string", "0-3")
    key_type: int = f("int8", "1+")
    coordinator_keys: list[str] = f(array("string"), "4+")


@dataclass(slots=True, kw_only=True)
class FindCoordinatorResponseCoordinator(Struct):
    key: str = f("string", "4+")
    node_id: int = f("int32", "4+")
    host: str = f("string", "4+")
    port: int = f("int32", "4+")
    error_code: int = f("int16", "4+")
    error_message: str | None = f("string", "4+", nullable="4+", ignorable=True)


@message(api_key=10, valid="0-6", flexible="3+")
@dataclass(slots=True, kw_only=True)
class FindCoordinatorResponse(Struct):
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    error_code: int = f("int16", "0-3")
    error_message: str | None = f("string", "1-3", nullable="1-3", ignorable=True)
    node_id: int = f("int32", "0-3")
    host: str = f("string", "0-3")
    port: int = f("int32", "0-3")
    coordinators: list[FindCoordinatorResponseCoordinator] = f(
        array(FindCoordinatorResponseCoordinator),
        "4+",
    )
