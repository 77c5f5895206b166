"""KIP-848 consumer group settings, with Kafka's names, defaults and bounds."""

from __future__ import annotations

from ..frozen import frozen

#: Kafka's group.consumer.assignors default: uniform first (the default), then range.
DEFAULT_ASSIGNOR = "uniform"

#: group.consumer.migration.policy values (Kafka's ConsumerGroupMigrationPolicy): whether a
#: classic group converts to a consumer group when a consumer-protocol member joins it
#: (upgrade), and back when its last consumer-protocol member leaves (downgrade).
MIGRATION_POLICIES = ("disabled", "downgrade", "upgrade", "bidirectional")

#: KIP-1263's bounds on the assignment interval, the daemon's and each group's: Kafka 4.3's
#: group.consumer.min/max.assignment.interval.ms defaults (fixed here, not settings).
MIN_ASSIGNMENT_INTERVAL_MS = 0
MAX_ASSIGNMENT_INTERVAL_MS = 15000


@frozen
class ConsumerGroupConfig:
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    min_session_timeout_ms: int = 45000  # group.consumer.min.session.timeout.ms
    max_session_timeout_ms: int = 60000  # group.consumer.max.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    min_heartbeat_interval_ms: int = 5000  # group.consumer.min.heartbeat.interval.ms
    max_heartbeat_interval_ms: int = 15000  # group.consumer.max.heartbeat.interval.ms
    max_size: int = 2147483647  # group.consumer.max.size
    #: group.consumer.assignment.interval.ms (KIP-1263, Kafka 4.3's default): the longest an
    #: assigned member's heartbeat waits for a target while its group keeps changing
    #: (coalesce.py); 0: the changes of one event-loop turn share one target.
    assignment_interval_ms: int = 1000
    # Bounds on the work clients' SubscribedTopicRegex patterns cause (this daemon's own
    # settings, named as Kafka's; Kafka bounds a pattern only by the request size).
    regex_max_bytes: int = 65536  # group.consumer.regex.max.bytes: longest pattern (UTF-8)
    regex_cache_bytes: int = 64 << 20  # group.consumer.regex.cache.bytes: compiled patterns
    regex_resolve_timeout_ms: int = 5000  # group.consumer.regex.resolve.timeout.ms
    regex_max_pending: int = 4  # group.consumer.regex.max.pending: resolutions waiting
    regex_refresh_interval_ms: int = 600000  # group.consumer.regex.refresh.interval.ms
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    @property
    def migration_enabled(self) -> bool:
        """Classic members may be part of a consumer group at all."""
        return self.migration_policy != "disabled"

    def problems(self) -> list[str]:
        """What Kafka's GroupCoordinatorConfig refuses at start, in its words."""
        s, hb = "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms"
        checks = [
            (
                self.regex_refresh_interval_ms >= 10000,
                f"Invalid value {self.regex_refresh_interval_ms} for configuration"
                " group.consumer.regex.refresh.interval.ms: Value must be at least 10000",
            ),
            (
                self.max_heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to"
                " group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                f"{hb} must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
                f"{hb} must be less than or equal to group.consumer.max.heartbeat.interval.ms",
            ),
            (
                self.max_session_timeout_ms >= self.min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms must be greater than or equal to"
                " group.consumer.min.session.timeout.ms",
            ),
            (
                self.session_timeout_ms >= self.min_session_timeout_ms,
                f"{s} must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                self.session_timeout_ms <= self.max_session_timeout_ms,
                f"{s} must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (self.heartbeat_interval_ms < self.session_timeout_ms, f"{hb} must be less than {s}"),
            (
                self.assignment_interval_ms >= MIN_ASSIGNMENT_INTERVAL_MS,
                "group.consumer.assignment.interval.ms must be greater than or equal to"
                " group.consumer.min.assignment.interval.ms",
            ),
            (
                self.assignment_interval_ms <= MAX_ASSIGNMENT_INTERVAL_MS,
                "group.consumer.assignment.interval.ms must be less than or equal to"
                " group.consumer.max.assignment.interval.ms",
            ),
        ]
        return [message for ok, message in checks if not ok]
