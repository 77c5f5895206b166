"""DescribeConfigs and IncrementalAlterConfigs for GROUP resources: a consumer group's own
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` (Kafka's dynamic
group configs; the rules are in ``group/consumer/group_configs.py``).

A coordinator keeps no broker or topic configs: any other resource type is refused, per
resource, with INVALID_REQUEST and a message saying so. Authorization as Kafka:
DESCRIBE_CONFIGS (implied by ALTER_CONFIGS) on the group to describe, ALTER_CONFIGS to
alter (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.apis.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from protocol.errors import ErrorCode

from ..group.consumer import group_configs
from .admission import GROUP_RESOURCE
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Outcome, Pending, call

NOT_SERVED = "This group coordinator serves the configs of GROUP resources only."


def _refusal(
    resource_type: int, name: str, refused: Mapping[str, int]
) -> tuple[ErrorCode, str | None] | None:
    """Why a resource is refused: not a group, or a group admission refused
    (``admission.DESCRIBE_CONFIGS``, ``admission.INCREMENTAL_ALTER_CONFIGS``)."""
    if resource_type != GROUP_RESOURCE:
        return ErrorCode.INVALID_REQUEST, NOT_SERVED
    if (code := refused.get(name)) is not None:
        return ErrorCode(code), None
    return None


def describe_configs(
    node: Node,
    body: DescribeConfigsRequest,
    version: int,
    conn: ConnectionContext,
    admission_refused: Mapping[str, int],
) -> Outcome[DescribeConfigsResponse]:
    results = []
    for res in body.resources:
        name = res.resource_name
        refused = _refusal(res.resource_type, name, admission_refused)
        if refused is not None:
            code, message = refused
            results.append(
                DescribeConfigsResult(
                    error_code=code,
                    error_message=message,
                    resource_type=res.resource_type,
                    resource_name=name,
                    configs=[],
                )
            )
            continue
        entries = node.groups.describe_group_configs(name, res.configuration_keys)
        results.append(
            DescribeConfigsResult(
                error_code=0,
                resource_type=res.resource_type,
                resource_name=name,
                configs=[_entry(e, body) for e in entries],
            )
        )
    return Outcome(DescribeConfigsResponse(throttle_time_ms=0, results=results))


def _entry(
    e: group_configs.ConfigEntry, body: DescribeConfigsRequest
) -> DescribeConfigsResourceResult:
    synonyms = []
    if body.include_synonyms:
        if e.source is group_configs.Source.GROUP_CONFIG:
            synonyms.append(DescribeConfigsSynonym(name=e.name, value=e.value, source=e.source))
        setting, value, source = e.broker_setting
        synonyms.append(DescribeConfigsSynonym(name=setting, value=value, source=source))
    return DescribeConfigsResourceResult(
        name=e.name,
        value=e.value,
        read_only=False,
        config_source=e.source,
        is_sensitive=False,
        synonyms=synonyms,
        config_type=group_configs.INT_TYPE,
        documentation=group_configs.DOCS[e.name] if body.include_documentation else None,
    )


def incremental_alter_configs(
    node: Node,
    body: IncrementalAlterConfigsRequest,
    version: int,
    conn: ConnectionContext,
    admission_refused: Mapping[str, int],
) -> Outcome[IncrementalAlterConfigsResponse]:
    refusals: dict[int, tuple[ErrorCode, str | None]] = {}
    changes: list[tuple[str, list[tuple[str, int, str | None]]]] = []
    for i, res in enumerate(body.resources):
        name = res.resource_name
        refused = _refusal(res.resource_type, name, admission_refused)
        if refused is not None:
            refusals[i] = refused
            continue
        changes.append((name, [(c.name, c.config_operation, c.value) for c in res.configs]))

    def render(altered: list[group_configs.ConfigError | None]) -> IncrementalAlterConfigsResponse:
        outcomes = iter(altered)
        responses = []
        for i, res in enumerate(body.resources):
            if i in refusals:
                code, message = refusals[i]
            else:
                error = next(outcomes)
                code, message = (
                    (ErrorCode.NONE, None) if error is None else (error.code, error.message)
                )
            responses.append(
                IncrementalAlterConfigsResourceResponse(
                    error_code=code,
                    error_message=message,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                )
            )
        return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=responses)

    def failed(code: ErrorCode) -> IncrementalAlterConfigsResponse:
        return render(
            [group_configs.ConfigError(code, "The configs could not be stored.")] * len(changes)
        )

    token = Pending()
    effects = node.groups.alter_group_configs(token, changes, body.validate_only, node.now_ms())
    result: Outcome[Any] = call(effects, token, render, failed)
    return result
