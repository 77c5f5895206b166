"""KIP-848 consumer group settings, with Kafka's names, defaults and bounds."""

from __future__ import annotations

from ..frozen import frozen

#: Kafka's group.consumer.assignors default: uniform first (the default), then range.
DEFAULT_ASSIGNOR = "uniform"


@frozen
class ConsumerGroupConfig:
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    min_session_timeout_ms: int = 45000  # group.consumer.min.session.timeout.ms
    max_session_timeout_ms: int = 60000  # group.consumer.max.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    min_heartbeat_interval_ms: int = 5000  # group.consumer.min.heartbeat.interval.ms
    max_heartbeat_interval_ms: int = 15000  # group.consumer.max.heartbeat.interval.ms
    max_size: int = 2147483647  # group.consumer.max.size

    def problems(self) -> list[str]:
        """What Kafka's GroupCoordinatorConfig refuses at start, in its words."""
        s, hb = "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms"
        checks = [
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
        ]
        return [message for ok, message in checks if not ok]
