"""``serve`` options for KIP-848 consumer groups: Kafka's group.consumer.* settings, with
their names, defaults and the bounds Kafka checks at start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..group.consumer.config import MIGRATION_POLICIES, ConsumerGroupConfig

_F = TypeVar("_F", bound=Callable[..., Any])
_DEFAULT = ConsumerGroupConfig()

#: (option, field, Kafka setting and what it is)
_OPTIONS = [
    (
        "--group-consumer-session-timeout-ms",
        "session_timeout_ms",
        "group.consumer.session.timeout.ms: a consumer-protocol member's session",
    ),
    (
        "--group-consumer-min-session-timeout-ms",
        "min_session_timeout_ms",
        "group.consumer.min.session.timeout.ms",
    ),
    (
        "--group-consumer-max-session-timeout-ms",
        "max_session_timeout_ms",
        "group.consumer.max.session.timeout.ms",
    ),
    (
        "--group-consumer-heartbeat-interval-ms",
        "heartbeat_interval_ms",
        "group.consumer.heartbeat.interval.ms: how often consumer-protocol members heartbeat",
    ),
    (
        "--group-consumer-min-heartbeat-interval-ms",
        "min_heartbeat_interval_ms",
        "group.consumer.min.heartbeat.interval.ms",
    ),
    (
        "--group-consumer-max-heartbeat-interval-ms",
        "max_heartbeat_interval_ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    ("--group-consumer-max-size", "max_size", "group.consumer.max.size: members per group"),
    (
        "--group-consumer-assignment-interval-ms",
        "assignment_interval_ms",
        "group.consumer.assignment.interval.ms (KIP-1263): the longest an assigned member's"
        " heartbeat waits for its group's next target assignment while the group keeps"
        " changing (joiners wait up to the heartbeat interval); 0: the changes of one"
        " event-loop turn share one target",
    ),
    (
        "--group-consumer-regex-max-bytes",
        "regex_max_bytes",
        "group.consumer.regex.max.bytes: the longest SubscribedTopicRegex accepted (UTF-8"
        " bytes; a longer one is INVALID_REGULAR_EXPRESSION)",
    ),
    (
        "--group-consumer-regex-cache-bytes",
        "regex_cache_bytes",
        "group.consumer.regex.cache.bytes: memory for compiled regex patterns (an estimate,"
        " least recently used out)",
    ),
    (
        "--group-consumer-regex-resolve-timeout-ms",
        "regex_resolve_timeout_ms",
        "group.consumer.regex.resolve.timeout.ms: the longest a pattern may take to compile"
        " and match (then it is refused and the regex worker restarted)",
    ),
    (
        "--group-consumer-regex-refresh-interval-ms",
        "regex_refresh_interval_ms",
        "group.consumer.regex.refresh.interval.ms: how long a group's regex resolutions stand"
        " (then resolved again, with the ACLs of the member heartbeating; at least 10000)",
    ),
    (
        "--group-consumer-regex-max-pending",
        "regex_max_pending",
        "group.consumer.regex.max.pending: regex resolutions waiting at once (more are told"
        " to retry, COORDINATOR_NOT_AVAILABLE)",
    ),
]

#: Options that may be 0 (the others are at least 1, as Kafka's atLeast(1)).
_MAY_BE_ZERO = {"assignment_interval_ms"}


def consumer_group_options(option: Callable[..., Callable[[_F], _F]]) -> Callable[[_F], _F]:
    """Add the options with ``option`` (the CLI's env-aware ``click.option``)."""

    def decorate(command: _F) -> _F:
        command = option(
            "--group-consumer-migration-policy",
            default=_DEFAULT.migration_policy,
            type=click.Choice(MIGRATION_POLICIES),
            help="group.consumer.migration.policy: a classic group becomes a consumer group"
            " when a consumer-protocol member joins (upgrade), and back when its last"
            " consumer-protocol member leaves (downgrade)",
        )(command)
        for name, attr, help_text in reversed(_OPTIONS):
            command = option(
                name,
                default=getattr(_DEFAULT, attr),
                type=click.IntRange(min=0 if attr in _MAY_BE_ZERO else 1),
                help=help_text,
            )(command)
        return command

    return decorate


def consumer_config_from_options(options: dict[str, Any]) -> ConsumerGroupConfig:
    config = ConsumerGroupConfig(
        **{attr: options[name[2:].replace("-", "_")] for name, attr, _ in _OPTIONS},
        migration_policy=options.get("group_consumer_migration_policy", _DEFAULT.migration_policy),
    )
    problems = config.problems()
    if problems:
        raise click.UsageError("; ".join(problems))
    return config
