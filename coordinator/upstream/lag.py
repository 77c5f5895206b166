"""Reading log-end offsets from the upstream for lag (I/O): every ``lag_refresh_ms`` at
most, one ListOffsets (latest) per upstream broker for the partitions the groups have
committed offsets on, stored in the node's ``LogEnds`` (``ends.py``)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable
from types import MappingProxyType

import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from protocol.apis import ApiKey
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.errors import DecodeError, ErrorCode

from ..handlers.node import Node
from .ends import TopicPartition, totals
from .link import UpstreamError
from .proxy import Upstream

log = structlog.get_logger("upstream")

LATEST = -1


def committed_offsets(node: Node) -> dict[str, dict[TopicPartition, int]]:
    """Every group's committed offsets, through the state machine's public queries."""
    groups = node.groups
    now = node.now_ms()
    out: dict[str, dict[TopicPartition, int]] = {}
    for listed in groups.list_groups([], []):
        result = groups.fetch_offsets(listed.group_id, None, now)
        out[listed.group_id] = {
            (t.topic, p.partition): p.offset
            for t in result.topics
            for p in t.partitions
            if p.offset >= 0
        }
    return out


class LagReader:
    def __init__(self, upstream: Upstream, node: Node) -> None:
        self.upstream = upstream
        self.node = node
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _loop(self) -> None:
        interval = self.upstream.settings.lag_refresh_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.read()
            except (UpstreamError, DecodeError, OSError) as exc:
                log.debug("log-end offsets not read", error=str(exc) or type(exc).__name__)

    async def read(self) -> None:
        """Read the log ends of every partition some group has committed on."""
        committed = committed_offsets(self.node)
        wanted = sorted({tp for offsets in committed.values() for tp in offsets})
        by_leader: dict[int | None, list[TopicPartition]] = defaultdict(list)
        for topic, partition in wanted:
            by_leader[self.upstream.leader_of(topic, partition)].append((topic, partition))
        versions = self.upstream.forwarded.get(ApiKey.LIST_OFFSETS)
        if versions is None:
            return
        version = min(versions[1], 7)
        ends: dict[TopicPartition, int] = {}
        for leader, partitions in by_leader.items():
            topics: dict[str, list[ListOffsetsPartition]] = defaultdict(list)
            for topic, partition in partitions:
                topics[topic].append(
                    ListOffsetsPartition(partition_index=partition, timestamp=LATEST)
                )
            request = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
            )
            answer = await self.upstream.ask(leader, request, version)
            assert isinstance(answer, ListOffsetsResponse)
            for t in answer.topics:
                for p in t.partitions:
                    if p.error_code == ErrorCode.NONE and p.offset >= 0:
                        ends[(t.name, p.partition_index)] = p.offset
        log_ends = self.node.log_ends
        log_ends.ends = MappingProxyType(ends)
        log_ends.totals = MappingProxyType(totals(committed, ends))
        log_ends.read_ms = self.node.now_ms()


class LagGauges(Collector):
    """``group_coordinator_group_lag{group,topic}``: the lag as last read (no Kafka broker
    metric; kafka-consumer-groups.sh's LAG summed per topic)."""

    def __init__(self, node: Node) -> None:
        self.log_ends = node.log_ends

    def describe(self) -> Iterable[Metric]:
        return [self._family(), self._reachable()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for (group, topic), lag in sorted(self.log_ends.totals.items()):  # replaced whole
            family.add_metric([group, topic], lag)
        reachable = self._reachable()
        upstream = self.log_ends.upstream
        reachable.add_metric([], 1 if upstream is not None and upstream.reachable else 0)
        return [family, reachable]

    @staticmethod
    def _reachable() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "group_coordinator_upstream_reachable",
            "1 while the upstream broker answers the daemon, 0 while it does not",
        )

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "group_coordinator_group_lag",
            "Records behind the upstream's log end, per group and topic (serve --upstream)",
            labels=["group", "topic"],
        )
