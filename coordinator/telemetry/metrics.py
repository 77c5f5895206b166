"""Prometheus metrics (``--metrics-listen``), served by ``prometheus-client``'s HTTP thread.

Three sources, each as cheap as it can be for what it measures:
- group events (``on_event``, an event sink): rebalances, their durations, expiries;
- requests (``request_received`` and ``request_answered*``, per request or per compiled
  lane read): counts, latency, errors; counts and latencies are tallied per (API, version)
  on the event loop (a dict lookup and a few integer additions) and handed to the Prometheus
  children, whose updates take locks, when a scrape collects them (``_Tallies``);
- gauges read at scrape time (groups by state, members, connections): the HTTP thread asks
  the event loop for a snapshot, so nothing on the request path keeps them up to date.

Each HELP text names the Kafka metric it mirrors, where Kafka has one.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import assert_never
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from protocol.apis import Api
from protocol.errors import ErrorCode
from protocol.schema import Struct

from ..cluster import events as cluster
from ..group import events
from ..group.results import GroupStats
from ..shared.events import NodeEvent

NS = "group_coordinator"
LATENCY_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300)
REBALANCE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
SNAPSHOT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the scrape-time gauges show, taken on the event loop."""

    groups_by_state: dict[str, int]
    members: int
    connections: int
    consumer_groups_by_state: dict[str, int] = field(default_factory=dict)
    consumer_members: int = 0
    members_revoking: int = 0


class _RequestSeries:
    """The label children of one (API, version), looked up once, and the requests not yet
    handed to them: a request is tallied here (integer additions on the event loop) and
    the children, whose every update takes a lock and walks the buckets, are told at the
    next scrape (``Metrics.flush``). Per heartbeat that was more than the heartbeat."""

    __slots__ = ("api", "latency", "received", "requests", "waited", "waits")

    def __init__(self, metrics: Metrics, api: str, version: int) -> None:
        self.api = api
        self.requests = metrics.requests.labels(api, str(version))
        self.latency = metrics.request_latency.labels(api)
        self.received = 0
        #: Latencies not yet observed: their sum, and how many fell in each bucket.
        self.waited = 0.0
        self.waits = [0] * (len(LATENCY_BUCKETS) + 1)

    def flush(self) -> None:
        if self.received:
            self.requests.inc(self.received)
            self.received = 0
        waits = self.waits
        if any(waits):
            _observe_tallied(self.latency, self.waited, waits)
            self.waited = 0.0
            self.waits = [0] * len(waits)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry if registry is not None else CollectorRegistry()
        # First in the registry, so that a scrape flushes the tallied requests before it
        # reads their counters.
        self._loop: asyncio.AbstractEventLoop | None = None
        r.register(_Tallies(self))
        self.rebalances = Counter(
            f"{NS}_rebalances",
            "Rebalances started, by trigger (Kafka: group-coordinator-metrics "
            "classic-group-rebalance-count)",
            ["trigger"],
            registry=r,
        )
        self.rebalance_duration = Histogram(
            f"{NS}_rebalance_duration_seconds",
            "From a rebalance's start until the group is Stable or Empty again (Kafka's "
            "consumers report it as rebalance-latency; the broker has no equivalent)",
            buckets=REBALANCE_BUCKETS,
            registry=r,
        )
        self.session_expirations = Counter(
            f"{NS}_session_expirations",
            "Members removed by a timer: session_timeout, new_member_join_timeout, "
            "rebalance_timeout (did not rejoin), sync_timeout (no Kafka equivalent)",
            ["timer"],
            registry=r,
        )
        self.members_joined = Counter(
            f"{NS}_members_joined", "Members added to groups (no Kafka equivalent)", registry=r
        )
        self.members_left = Counter(
            f"{NS}_members_left", "Members that sent LeaveGroup (no Kafka equivalent)", registry=r
        )
        self.offset_commits = Counter(
            f"{NS}_offset_commits",
            "Partition offsets committed (Kafka: group-coordinator-metrics offset-commit-count)",
            registry=r,
        )
        self.requests = Counter(
            f"{NS}_requests",
            "Requests handled, by API and version (Kafka: kafka.network RequestMetrics "
            "RequestsPerSec{request,version})",
            ["api", "version"],
            registry=r,
        )
        self.request_latency = Histogram(
            f"{NS}_request_latency_seconds",
            "From decoded request to response, parked time included: JoinGroup and SyncGroup "
            "wait for the rebalance (Kafka: kafka.network RequestMetrics TotalTimeMs{request})",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            f"{NS}_errors",
            "Error codes in responses, top level and per group/topic/partition (Kafka: "
            "kafka.network RequestMetrics ErrorsPerSec{request,error})",
            ["api", "error"],
            registry=r,
        )
        self.limit_hits = Counter(
            f"{NS}_limit_hits",
            "Requests refused or connections closed by a configured limit, by the limit's "
            "option name (Kafka: socket-server-metrics connection-close-total and "
            "kafka.network RequestMetrics ErrorsPerSec come nearest; no direct equivalent)",
            ["limit"],
            registry=r,
        )
        self.partitions_owned = Gauge(
            f"{NS}_partitions_owned",
            "Coordinator partitions this node owns (a cluster node; Kafka: the partitions of "
            "__consumer_offsets it leads)",
            registry=r,
        )
        self.partition_moves = Counter(
            f"{NS}_partition_moves",
            "Coordinator partitions acquired, released (handed over) or fenced (taken over "
            "by another node while this one was presumed dead)",
            ["how"],
            registry=r,
        )
        self.partition_load = Histogram(
            f"{NS}_partition_load_seconds",
            "Time to load acquired coordinator partitions (Kafka: group-coordinator-metrics "
            "partition-load-time-max)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lease_renewals = Counter(
            f"{NS}_lease_renewals", "Renewals of this node's lease in the database", registry=r
        )
        self.store_write_failures = Counter(
            f"{NS}_store_write_failures",
            "Store writes that failed (a full or failing disk); their requests are answered "
            "NOT_COORDINATOR (Kafka: an append failing with KAFKA_STORAGE_ERROR)",
            registry=r,
        )
        self.target_assignments = Counter(
            f"{NS}_consumer_target_assignments",
            "Target assignments computed by the server-side assignor for KIP-848 consumer "
            "groups (no Kafka equivalent; Kafka logs them)",
            registry=r,
        )
        self.group_conversions = Counter(
            f"{NS}_group_conversions",
            "Groups converted between the classic and the consumer protocol (KIP-848's online"
            " migration), by direction",
            ["from_type", "to_type"],
            registry=r,
        )
        self.reconcile_duration = Histogram(
            f"{NS}_consumer_reconcile_seconds",
            "From a KIP-848 target assignment to a member owning it at that epoch, revocations "
            "by others included (no Kafka equivalent)",
            buckets=REBALANCE_BUCKETS,
            registry=r,
        )
        self._series: dict[tuple[int, int], _RequestSeries] = {}

    # -- events (on the event loop) ----------------------------------------------------------

    def on_event(self, event: NodeEvent) -> None:
        match event:
            case events.RebalanceStarted():
                self.rebalances.labels(event.trigger.value).inc()
            case events.SyncCompleted():
                if event.rebalance_duration_ms is not None:
                    self.rebalance_duration.observe(event.rebalance_duration_ms / 1000)
            case events.JoinCompleted():
                if event.members == 0:  # everyone left: the rebalance ends Empty, with no sync
                    self.rebalance_duration.observe(event.duration_ms / 1000)
            case events.MemberJoined():
                self.members_joined.inc()
            case events.MemberRemoved():
                if event.cause is events.RemovalCause.LEFT:
                    self.members_left.inc()
                elif event.cause.expired:
                    self.session_expirations.labels(event.cause.value).inc()
            case events.OffsetsCommitted():
                self.offset_commits.inc(event.count)
            case events.LimitReached():
                self.limit_hit(event.limit)
            case cluster.PartitionsAcquired():
                self.partitions_owned.set(event.owned)
                self.partition_moves.labels("acquired").inc(len(event.partitions))
                self.partition_load.observe(event.load_ms / 1000)
            case cluster.PartitionsReleased():
                self.partitions_owned.set(event.owned)
                self.partition_moves.labels("released").inc(len(event.partitions))
            case cluster.PartitionsFenced():
                self.partitions_owned.set(event.owned)
                self.partition_moves.labels("fenced").inc(len(event.partitions))
            case cluster.LeaseRenewed():
                self.lease_renewals.inc()
            case events.TargetAssignmentComputed():
                self.target_assignments.inc()
            case events.GroupConverted():
                self.group_conversions.labels(event.from_type, event.to_type).inc()
            case events.MemberReconciled():
                if event.duration_ms is not None:
                    self.reconcile_duration.observe(event.duration_ms / 1000)
            case (
                events.StaticMemberReplaced()
                | events.StateChanged()
                | events.GroupLoaded()
                | events.GroupReverted()
                | events.GroupUnloaded()
                | events.GroupDeleted()
                | events.OffsetsExpired()
                | events.GroupConfigCapped()
            ):
                pass  # the gauges read group states at scrape time
            case _:
                assert_never(event)

    def limit_hit(self, limit: str) -> None:
        """A configured limit refused a request or closed a connection."""
        self.limit_hits.labels(limit).inc()

    # -- requests (on the event loop) --------------------------------------------------------

    def request_received(self, api: Api, version: int) -> _RequestSeries:
        """Count a request of ``api`` at ``version``: every request, whichever path answers
        it (the dispatcher, or a heartbeat lane); ``request_answered`` or
        ``request_answered_code`` times it once its reply is ready."""
        series = self._series_of(api.key, api.name, version)
        series.received += 1
        return series

    def request_answered_code(self, series: _RequestSeries, error: int, started: float) -> None:
        """``request_answered`` for a reply that is a bare error code (a heartbeat lane's)."""
        _tally_wait(series, time.perf_counter() - started, 1)
        if error:
            self.errors.labels(series.api, _error_name(error)).inc()

    def requests_answered_code(
        self, api: Api, version: int, error: int, count: int, started: float
    ) -> None:
        """``count`` requests of ``api`` at ``version`` answered together with ``error``
        (a compiled lane's read): counted and timed as ``count`` calls of
        ``request_received`` and ``request_answered_code`` would count them, each waiting
        for the whole batch."""
        series = self._series_of(api.key, api.name, version)
        series.received += count
        _tally_wait(series, time.perf_counter() - started, count)
        if error:
            self.errors.labels(series.api, _error_name(error)).inc(count)

    def _series_of(self, api_key: int, api_name: str, version: int) -> _RequestSeries:
        series = self._series.get((api_key, version))
        if series is None:
            series = self._series[(api_key, version)] = _RequestSeries(self, api_name, version)
        return series

    def flush(self) -> None:
        """Hand the tallied requests to their Prometheus children (on the event loop: the
        tallies are its own)."""
        for series in self._series.values():
            series.flush()

    def request_answered(self, series: _RequestSeries, body: Struct, started: float) -> None:
        _tally_wait(series, time.perf_counter() - started, 1)
        nested = _LIST_FIELDS.get(type(body))
        if nested is None:
            nested = _LIST_FIELDS[type(body)] = _list_fields(body)
        top_level: int = getattr(body, "error_code", 0)
        if nested or top_level:  # a heartbeat without error stops here
            for code in _error_codes(body):
                self.errors.labels(series.api, _error_name(code)).inc()

    # -- scrape-time gauges and the HTTP endpoint --------------------------------------------

    def watch(self, loop: asyncio.AbstractEventLoop, snapshot: Callable[[], Snapshot]) -> None:
        self._loop = loop
        self.registry.register(_LiveGauges(loop, snapshot))

    def serve(self, host: str, port: int) -> WSGIServer:
        """Serve /metrics from a daemon thread; ``shutdown()`` and ``server_close()`` stop it."""
        server, _thread = start_http_server(port, host, registry=self.registry)
        return server


def _tally_wait(series: _RequestSeries, waited: float, count: int) -> None:
    """``count`` latencies of ``waited`` seconds, tallied in the bucket ``observe`` would
    put them in (the first bound not below it; the last slot is +Inf)."""
    series.waited += waited * count
    series.waits[bisect.bisect_left(LATENCY_BUCKETS, waited)] += count


def _observe_tallied(histogram: Histogram, waited: float, waits: list[int]) -> None:
    """Tallied latencies observed: their sum, and each bucket's count, as that many calls of
    ``observe`` would leave them (prometheus-client has no bulk observe; its histogram
    keeps one counter per bucket and one for the sum). One laid out otherwise is given
    each latency as its bucket's bound, the sum then kept as tallied."""
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if buckets is not None and total is not None and len(buckets) == len(waits):
        total.inc(waited)
        for bucket, n in zip(buckets, waits, strict=True):
            if n:
                bucket.inc(n)
        return
    bounds = (*LATENCY_BUCKETS, LATENCY_BUCKETS[-1] * 2)  # the last: above every bound
    for bound, n in zip(bounds, waits, strict=True):
        for _ in range(n):
            histogram.observe(bound)


class _Tallies(Collector):
    """Flushes the tallied requests when the registry is collected (it adds no metric of
    its own): on the event loop, where the tallies are written, whichever thread scrapes."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        loop = self.metrics._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop or not loop.is_running():
            self.metrics.flush()
            return []
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def flush() -> None:
            try:
                self.metrics.flush()
            finally:
                done.set_result(None)

        try:
            loop.call_soon_threadsafe(flush)
            done.result(SNAPSHOT_TIMEOUT_S)
        except (RuntimeError, concurrent.futures.TimeoutError):
            pass  # the loop is closed or too busy: this scrape shows the counts as they were
        return []


def take_snapshot(stats: GroupStats, connections: int) -> Snapshot:
    """What the gauges show (taken on the event loop: O(groups))."""
    return Snapshot(
        stats.groups_by_state,
        stats.members,
        connections,
        stats.consumer_groups_by_state,
        stats.consumer_members,
        stats.members_revoking,
    )


class _LiveGauges(Collector):
    def __init__(self, loop: asyncio.AbstractEventLoop, snapshot: Callable[[], Snapshot]) -> None:
        self.loop = loop
        self.snapshot = snapshot

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        result: concurrent.futures.Future[Snapshot] = concurrent.futures.Future()

        def take() -> None:
            try:
                result.set_result(self.snapshot())
            except Exception as exc:
                result.set_exception(exc)

        try:
            self.loop.call_soon_threadsafe(take)
            snap = result.result(SNAPSHOT_TIMEOUT_S)
        except (RuntimeError, concurrent.futures.TimeoutError):
            return []  # the loop is closed or too busy: leave these out of this scrape
        return self._families(snap)

    @staticmethod
    def _families(snap: Snapshot | None) -> list[Metric]:
        groups = GaugeMetricFamily(
            f"{NS}_groups",
            "Groups by state (Kafka: GroupMetadataManager NumGroups{Stable,PreparingRebalance,"
            "CompletingRebalance,Empty,Dead}; group-coordinator-metrics classic-group-count)",
            labels=["state"],
        )
        members = GaugeMetricFamily(
            f"{NS}_members",
            "Members of classic groups; KIP-848 groups' are consumer_members (no Kafka equivalent)",
        )
        connections = GaugeMetricFamily(
            f"{NS}_connections",
            "Open client connections (Kafka: socket-server-metrics connection-count)",
        )
        consumer_groups = GaugeMetricFamily(
            f"{NS}_consumer_groups",
            "KIP-848 consumer groups by state (Kafka: group-coordinator-metrics "
            "consumer-group-count{state})",
            labels=["state"],
        )
        consumer_members = GaugeMetricFamily(
            f"{NS}_consumer_members", "Members of KIP-848 consumer groups (no Kafka equivalent)"
        )
        revoking = GaugeMetricFamily(
            f"{NS}_consumer_members_revoking",
            "KIP-848 members that still have partitions to revoke before others may take "
            "them (no Kafka equivalent)",
        )
        if snap is not None:
            for state, count in snap.groups_by_state.items():
                groups.add_metric([state], count)
            members.add_metric([], snap.members)
            connections.add_metric([], snap.connections)
            for state, count in snap.consumer_groups_by_state.items():
                consumer_groups.add_metric([state], count)
            consumer_members.add_metric([], snap.consumer_members)
            revoking.add_metric([], snap.members_revoking)
        return [groups, members, connections, consumer_groups, consumer_members, revoking]


#: Per response class, the fields declared as lists (where nested results may hold error
#: codes): a Heartbeat response has none, so its walk is one getattr.
_LIST_FIELDS: dict[type, tuple[str, ...]] = {}


def _list_fields(body: object) -> tuple[str, ...]:
    if not is_dataclass(body):
        return ()
    return tuple(f.name for f in fields(body) if str(f.type).startswith("list["))


def _error_codes(body: object) -> Iterator[int]:
    """Every non-zero ``error_code`` in a response, nested results included."""
    code = getattr(body, "error_code", 0)
    if code:
        yield code
    names = _LIST_FIELDS.get(type(body))
    if names is None:
        names = _LIST_FIELDS[type(body)] = _list_fields(body)
    for name in names:
        value = getattr(body, name)
        if isinstance(value, list) and value and isinstance(value[0], Struct):
            for item in value:
                yield from _error_codes(item)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
