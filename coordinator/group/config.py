"""Group settings, with Kafka's names and defaults (spec section 5)."""

from __future__ import annotations

from dataclasses import field

from .consumer.config import ConsumerGroupConfig
from .frozen import frozen


@frozen
class GroupConfig:
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = 2147483647  # group.max.size
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    new_member_join_timeout_ms: int = 300000  # hard-coded in Kafka
    # Not in Kafka: limits that keep one client from exhausting a shared coordinator.
    max_groups: int = 1_000_000  # groups this node holds; a new one beyond is refused
    max_pending_members: int = 10_000  # KIP-394 ids handed out but not yet joined, per group
    max_member_metadata_bytes: int = 1 << 20  # a member's protocol metadata, all protocols
    #: KIP-848 consumer groups (group.consumer.*).
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
