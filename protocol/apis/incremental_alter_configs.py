"""IncrementalAlterConfigs (44): set or delete single configuration entries of resources
(here: groups, KIP-848)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class IncrementalAlterConfigsAlterableConfig(Struct):
    name: str = f("string")
    config_operation: int = f("int8")  # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
    value: str | None = f("string", nullable="0+", default=None)


@dataclass(slots=True, kw_only=True)
class IncrementalAlterConfigsResource(Struct):
    resource_type: int = f("int8")
    resource_name: str = f("string")
    configs: list[IncrementalAlterConfigsAlterableConfig] = f(
        array(IncrementalAlterConfigsAlterableConfig)
    )


@message(api_key=44, valid="0-1", flexible="1+")
@dataclass(slots=True, kw_only=True)
class IncrementalAlterConfigsRequest(Struct):
    resources: list[IncrementalAlterConfigsResource] = f(array(IncrementalAlterConfigsResource))
    validate_only: bool = f("bool")


@dataclass(slots=True, kw_only=True)
class IncrementalAlterConfigsResourceResponse(Struct):
    error_code: int = f("int16")
    error_message: str | None = f("string", nullable="0+", default=None)
    resource_type: int = f("int8")
    resource_name: str = f("string")


@message(api_key=44, valid="0-1", flexible="1+")
@dataclass(slots=True, kw_only=True)
class IncrementalAlterConfigsResponse(Struct):
    throttle_time_ms: int = f("int32")
    responses: list[IncrementalAlterConfigsResourceResponse] = f(
        array(IncrementalAlterConfigsResourceResponse)
    )
