"""confluent-kafka's AdminClient describes and alters a consumer group's own configs
(DescribeConfigs and IncrementalAlterConfigs on GROUP resources) against a real daemon;
they survive a restart and reach the group's members."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.client.connection import connect
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

from .conftest import Daemon

pytestmark = pytest.mark.integration

SESSION = "consumer.session.timeout.ms"
INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
GROUP_CONFIG_SOURCE = 8  # ConfigSource DYNAMIC_GROUP_CONFIG
DEFAULT_SOURCE = 5


def _admin(daemon: Daemon) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": daemon.bootstrap})


def _describe(daemon: Daemon, group: str) -> dict[str, tuple[str, int]]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = _admin(daemon)  # held until the answer: a destroyed client fails its futures
    resources = [ConfigResource(ResourceType.GROUP, group)]
    [future] = admin.describe_configs(resources, request_timeout=10).values()
    return {name: (e.value, int(e.source)) for name, e in future.result(timeout=15).items()}


def _alter(daemon: Daemon, group: str, **values: str | None) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entries = [
        ConfigEntry(
            name.replace("_", "."),
            value,
            incremental_operation=(
                AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
            ),
        )
        for name, value in values.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = _admin(daemon)
    [future] = admin.incremental_alter_configs([resource], request_timeout=10).values()
    future.result(timeout=15)


def _joined_interval(daemon: Daemon, group: str) -> int:
    async def join() -> int:
        c = await connect("127.0.0.1", daemon.port)
        r = await c.request(
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id="m-1",
                member_epoch=0,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=["t6"],
                topic_partitions=[],
            ),
            1,
            ConsumerGroupHeartbeatResponse,
        )
        c.close()
        assert r.error_code == 0, r.error_message
        return r.heartbeat_interval_ms

    return asyncio.run(join())


def test_an_admin_describes_and_alters_a_groups_configs(
    start_daemon: Callable[..., Daemon],
) -> None:
    from confluent_kafka import KafkaException

    daemon = start_daemon("--topic", "t6:6")
    assert _describe(daemon, "g") == {
        SESSION: ("45000", DEFAULT_SOURCE),
        INTERVAL: ("5000", DEFAULT_SOURCE),
        ASSIGNMENT_INTERVAL: ("1000", DEFAULT_SOURCE),  # KIP-1263 (Kafka 4.3)
    }
    _alter(daemon, "g", consumer_session_timeout_ms="50000", consumer_heartbeat_interval_ms="6000")
    described = _describe(daemon, "g")
    assert described[SESSION] == ("50000", GROUP_CONFIG_SOURCE)
    assert described[INTERVAL] == ("6000", GROUP_CONFIG_SOURCE)
    assert _joined_interval(daemon, "g") == 6000  # the group's members are told its interval
    assert _joined_interval(daemon, "other") == 5000

    with pytest.raises(KafkaException, match="must be less than or equal to"):
        _alter(daemon, "g", consumer_session_timeout_ms="90000")
    _alter(daemon, "g", consumer_assignment_interval_ms="200")
    assert _describe(daemon, "g")[ASSIGNMENT_INTERVAL] == ("200", GROUP_CONFIG_SOURCE)
    with pytest.raises(KafkaException, match="must be less than or equal to"):
        _alter(daemon, "g", consumer_assignment_interval_ms="15001")

    daemon.stop()
    daemon.start()
    assert _describe(daemon, "g")[SESSION] == ("50000", GROUP_CONFIG_SOURCE)  # stored
    _alter(daemon, "g", consumer_heartbeat_interval_ms=None)
    assert _describe(daemon, "g")[INTERVAL] == ("5000", DEFAULT_SOURCE)


def test_a_topics_configs_are_refused_with_a_reason(daemon: Daemon) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = _admin(daemon)
    resources = [ConfigResource(ResourceType.TOPIC, "t6")]
    [future] = admin.describe_configs(resources, request_timeout=10).values()
    with pytest.raises(KafkaException, match="GROUP resources only"):
        future.result(timeout=15)
