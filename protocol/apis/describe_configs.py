"""DescribeConfigs (32): the configuration of resources (here: groups, KIP-848)."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@dataclass(slots=True, kw_only=True)
class DescribeConfigsResource(Struct):
    resource_type: int = f("int8")
    resource_name: str = f("string")
    configuration_keys: list[str] | None = f(array("string"), nullable="0+", default=None)


@message(api_key=32, valid="1-4", flexible="4+")
@dataclass(slots=True, kw_only=True)
class DescribeConfigsRequest(Struct):
    resources: list[DescribeConfigsResource] = f(array(DescribeConfigsResource))
    include_synonyms: bool = f("bool", "1+", default=False)
    include_documentation: bool = f("bool", "3+", default=False)


@dataclass(slots=True, kw_only=True)
class DescribeConfigsSynonym(Struct):
    name: str = f("string", "1+")
    value: str | None = f("string", "1+", nullable="0+", default=None)
    source: int = f("int8", "1+")


@dataclass(slots=True, kw_only=True)
class DescribeConfigsResourceResult(Struct):
    name: str = f("string")
    value: str | None = f("string", nullable="0+", default=None)
    read_only: bool = f("bool")
    config_source: int = f("int8", "1+", default=-1, ignorable=True)
    is_sensitive: bool = f("bool")
    synonyms: list[DescribeConfigsSynonym] = f(array(DescribeConfigsSynonym), "1+", ignorable=True)
    config_type: int = f("int8", "3+", default=0, ignorable=True)
    documentation: str | None = f("string", "3+", nullable="0+", default=None, ignorable=True)


@dataclass(slots=True, kw_only=True)
class DescribeConfigsResult(Struct):
    error_code: int = f("int16")
    error_message: str | None = f("string", nullable="0+", default=None)
    resource_type: int = f("int8")
    resource_name: str = f("string")
    configs: list[DescribeConfigsResourceResult] = f(array(DescribeConfigsResourceResult))


@message(api_key=32, valid="1-4", flexible="4+")
@dataclass(slots=True, kw_only=True)
class DescribeConfigsResponse(Struct):
    throttle_time_ms: int = f("int32")
    results: list[DescribeConfigsResult] = f(array(DescribeConfigsResult))
