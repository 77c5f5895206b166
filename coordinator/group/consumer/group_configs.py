"""Per-group configuration (Kafka's dynamic group configs, KIP-848): an admin sets
``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms`` and (KIP-1263, Kafka
4.3) ``consumer.assignment.interval.ms`` for one group with IncrementalAlterConfigs and
reads them with DescribeConfigs (GROUP resources).

Kafka's GroupConfig rules: each value an integer of at least 1, within the daemon's
``group.consumer.min/max.*`` bounds, and the session longer than the interval (the values
left unset count as the daemon's). Kafka 4.1 knows ``share.*`` and ``streams.*`` group
configs too; this coordinator serves neither kind of group, so they are refused. A group's
configs are stored as a ``GroupConfigRecord`` (all of them; none left: deleted) and
applied to its members from their next heartbeat. A stored value outside the daemon's
bounds (they were narrowed since) is kept as stored and described so, but applied capped
to the bounds (KAFKA-20162, KIP-1240, Kafka 4.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocol.errors import ErrorCode

from ..context import Context
from ..events import GroupConfigCapped
from ..records import GroupConfigRecord
from .config import MAX_ASSIGNMENT_INTERVAL_MS, MIN_ASSIGNMENT_INTERVAL_MS, ConsumerGroupConfig

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
NAMES = (ASSIGNMENT_INTERVAL, HEARTBEAT_INTERVAL, SESSION_TIMEOUT)  # Kafka sorts them by name
#: Group configs of kinds of groups this coordinator does not serve.
OTHER_KINDS = ("share.", "streams.")

DOCS = {
    SESSION_TIMEOUT: "The timeout to detect client failures when using the consumer group"
    " protocol.",
    HEARTBEAT_INTERVAL: "The heartbeat interval given to the members of a consumer group.",
    ASSIGNMENT_INTERVAL: "The minimum time between target assignments of a consumer group.",
}


class Op(IntEnum):
    """IncrementalAlterConfigs' ConfigOperation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class Source(IntEnum):
    """DescribeConfigs' ConfigSource."""

    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


INT_TYPE = 3  # DescribeConfigs' ConfigType INT


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str
    source: Source
    #: The daemon-wide setting it overrides or stands for: (Kafka name, value, source).
    broker_setting: tuple[str, str, Source]


@dataclass(frozen=True, slots=True)
class ConfigError:
    code: ErrorCode
    message: str


def _broker(name: str, config: ConsumerGroupConfig) -> tuple[str, int, Source]:
    default = ConsumerGroupConfig()
    if name == SESSION_TIMEOUT:
        value, kafka = config.session_timeout_ms, default.session_timeout_ms
    elif name == HEARTBEAT_INTERVAL:
        value, kafka = config.heartbeat_interval_ms, default.heartbeat_interval_ms
    else:
        value, kafka = config.assignment_interval_ms, default.assignment_interval_ms
    source = Source.DEFAULT_CONFIG if value == kafka else Source.STATIC_BROKER_CONFIG
    return "group." + name, value, source


def _bounds(name: str, config: ConsumerGroupConfig) -> tuple[int, int]:
    if name == SESSION_TIMEOUT:
        return config.min_session_timeout_ms, config.max_session_timeout_ms
    if name == HEARTBEAT_INTERVAL:
        return config.min_heartbeat_interval_ms, config.max_heartbeat_interval_ms
    return MIN_ASSIGNMENT_INTERVAL_MS, MAX_ASSIGNMENT_INTERVAL_MS


def effective(ctx: Context, group_id: str, name: str) -> int:
    """The value that applies to ``group_id``: its own, capped to the daemon's bounds
    (KAFKA-20162), or the daemon's."""
    own = ctx.shard.group_configs.get(group_id, {}).get(name)
    if own is None:
        return _broker(name, ctx.config.consumer)[1]
    low, high = _bounds(name, ctx.config.consumer)
    return min(max(own, low), high)


def session_timeout_ms(ctx: Context, group_id: str) -> int:
    return effective(ctx, group_id, SESSION_TIMEOUT)


def heartbeat_interval_ms(ctx: Context, group_id: str) -> int:
    return effective(ctx, group_id, HEARTBEAT_INTERVAL)


def assignment_interval_ms(ctx: Context, group_id: str) -> int:
    return effective(ctx, group_id, ASSIGNMENT_INTERVAL)


def describe(ctx: Context, group_id: str, keys: list[str] | None) -> list[ConfigEntry]:
    """The group's configs (those named in ``keys``, all when None), as Kafka lists them."""
    own = ctx.shard.group_configs.get(group_id, {})
    entries = []
    for name in NAMES:
        if keys is not None and name not in keys:
            continue
        setting, value, source = _broker(name, ctx.config.consumer)
        broker = (setting, str(value), source)
        if name in own:
            entries.append(ConfigEntry(name, str(own[name]), Source.GROUP_CONFIG, broker))
        else:
            entries.append(ConfigEntry(name, str(value), source, broker))
    return entries


def alter(
    ctx: Context, group_id: str, changes: list[tuple[str, int, str | None]], validate_only: bool
) -> ConfigError | None:
    """Apply IncrementalAlterConfigs' (name, operation, value) to the group's configs; the
    error that refuses them all, else None (and, unless ``validate_only``, the new configs
    are recorded, to be stored before the answer)."""
    if not group_id.strip():
        return ConfigError(ErrorCode.INVALID_REQUEST, "Group name can't be empty.")
    names = [name for name, _, _ in changes]
    if len(set(names)) != len(names):
        return ConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    configs = dict(ctx.shard.group_configs.get(group_id, {}))
    for name, operation, value in changes:
        problem = _change(configs, name, operation, value)
        if problem is not None:
            return ConfigError(ErrorCode.INVALID_CONFIG, problem)
    problem = _check(configs, ctx.config.consumer)
    if problem is not None:
        return ConfigError(ErrorCode.INVALID_CONFIG, problem)
    if not validate_only and configs != ctx.shard.group_configs.get(group_id, {}):
        if configs:
            ctx.shard.group_configs[group_id] = configs
        else:
            ctx.shard.group_configs.pop(group_id, None)
        ctx.out.records.append(GroupConfigRecord(group_id, dict(configs)))
    return None


def _change(configs: dict[str, int], name: str, operation: int, value: str | None) -> str | None:
    if name not in NAMES:
        if name.startswith(OTHER_KINDS):
            return f"Group config {name} is for share or streams groups, not served here."
        return f"Unknown group config name: {name}"
    if operation == Op.DELETE:
        configs.pop(name, None)
        return None
    if operation in (Op.APPEND, Op.SUBTRACT):
        return f"Config value append is not allowed for config key: {name}"
    if operation != Op.SET:
        return f"Unknown config operation {operation} for config key: {name}"
    try:
        number = int(value if value is not None else "", 10)
    except ValueError:
        return f"Invalid value {value} for configuration {name}: Not a number of type INT"
    if not -(2**31) <= number < 2**31:
        return f"Invalid value {value} for configuration {name}: Not a number of type INT"
    least = 0 if name == ASSIGNMENT_INTERVAL else 1
    if number < least:
        return f"Invalid value {number} for configuration {name}: Value must be at least {least}"
    configs[name] = number
    return None


def _check(configs: dict[str, int], config: ConsumerGroupConfig) -> str | None:
    """Kafka's GroupConfig.validateValues, with the unset values the daemon's."""
    session = configs.get(SESSION_TIMEOUT, config.session_timeout_ms)
    interval = configs.get(HEARTBEAT_INTERVAL, config.heartbeat_interval_ms)
    checks = [
        (
            interval >= config.min_heartbeat_interval_ms,
            f"{HEARTBEAT_INTERVAL} must be greater than or equal to"
            " group.consumer.min.heartbeat.interval.ms",
        ),
        (
            interval <= config.max_heartbeat_interval_ms,
            f"{HEARTBEAT_INTERVAL} must be less than or equal to"
            " group.consumer.max.heartbeat.interval.ms",
        ),
        (
            session >= config.min_session_timeout_ms,
            f"{SESSION_TIMEOUT} must be greater than or equal to"
            " group.consumer.min.session.timeout.ms",
        ),
        (
            session <= config.max_session_timeout_ms,
            f"{SESSION_TIMEOUT} must be less than or equal to"
            " group.consumer.max.session.timeout.ms",
        ),
        (session > interval, f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}"),
        (
            configs.get(ASSIGNMENT_INTERVAL, MIN_ASSIGNMENT_INTERVAL_MS)
            >= MIN_ASSIGNMENT_INTERVAL_MS,
            f"{ASSIGNMENT_INTERVAL} must be greater than or equal to"
            " group.consumer.min.assignment.interval.ms",
        ),
        (
            configs.get(ASSIGNMENT_INTERVAL, MAX_ASSIGNMENT_INTERVAL_MS)
            <= MAX_ASSIGNMENT_INTERVAL_MS,
            f"{ASSIGNMENT_INTERVAL} must be less than or equal to"
            " group.consumer.max.assignment.interval.ms",
        ),
    ]
    return next((message for ok, message in checks if not ok), None)


def restore(ctx: Context, group_id: str, configs: dict[str, int]) -> None:
    """The group's configs as stored (none: empty); each one today's bounds cap is reported
    (KAFKA-20162: the operator narrowed the bounds since it was set, and members will not
    get the value an admin describes)."""
    if configs:
        ctx.shard.group_configs[group_id] = dict(configs)
    else:
        ctx.shard.group_configs.pop(group_id, None)
    for name in NAMES:
        stored = configs.get(name)
        if stored is None:
            continue
        low, high = _bounds(name, ctx.config.consumer)
        applied = min(max(stored, low), high)
        if applied != stored:
            ctx.event(GroupConfigCapped(group_id, name, stored, applied, low, high))
