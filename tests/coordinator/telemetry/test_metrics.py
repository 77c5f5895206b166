"""Prometheus metrics over HTTP follow the groups as they form, rebalance and empty."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from coordinator.client.member import GroupMember
from coordinator.group.config import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from coordinator.telemetry import metrics as metrics_module
from coordinator.telemetry.metrics import Metrics
from coordinator.telemetry.settings import ObservabilitySettings
from protocol.apis import BY_KEY
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.errors import ErrorCode
from protocol.frames import decode_request, encode_request

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    settings = Settings(
        listen=("127.0.0.1", 0),
        store="memory",
        data_dir=tmp_path,
        topics=(("orders", 6),),
        group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500),
        observability=ObservabilitySettings(metrics_listen=("127.0.0.1", 0)),
    )
    srv = Server(settings)
    await srv.start()
    yield srv
    await srv.stop()


async def scrape(srv: Server) -> Samples:
    """GET /metrics from another thread: the scrape asks the event loop for its gauges."""
    assert srv.observability is not None
    url = f"http://127.0.0.1:{srv.observability.metrics_port}/metrics"

    def get() -> str:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return str(resp.read().decode())

    text = await asyncio.to_thread(get)
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def member(srv: Server, group: str, session_timeout_ms: int = 10000) -> GroupMember:
    return GroupMember(
        f"127.0.0.1:{srv.port}",
        group,
        topics=["orders"],
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=100,
    )


async def wait_for(srv: Server, check: object, timeout_s: float = 10.0) -> Samples:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        samples = await scrape(srv)
        if check(samples):  # type: ignore[operator]
            return samples
        assert asyncio.get_running_loop().time() < deadline, "metrics never got there"
        await asyncio.sleep(0.1)


@pytest.mark.integration  # waits for a real session to run out, members heartbeating in real time
async def test_metrics_follow_groups_members_rebalances_and_expiries(server: Server) -> None:
    before = await scrape(server)
    assert value(before, "group_coordinator_groups", state="Stable") == 0
    assert value(before, "group_coordinator_members") == 0

    # Only b's session is short: it is the one to run out (a loaded machine must not end a's).
    a, b = member(server, "metered"), member(server, "metered", session_timeout_ms=1000)
    await a.start(10)
    await b.start(10)
    formed = await wait_for(
        server, lambda s: value(s, "group_coordinator_groups", state="Stable") == 1
    )
    assert value(formed, "group_coordinator_members") == 2
    assert value(formed, "group_coordinator_connections") >= 2
    assert value(formed, "group_coordinator_rebalances_total", trigger="new_member") == 2
    assert value(formed, "group_coordinator_rebalance_duration_seconds_count") == 2
    assert value(formed, "group_coordinator_requests_total", api="JoinGroup", version="9") >= 2
    assert value(formed, "group_coordinator_request_latency_seconds_count", api="Heartbeat") > 0
    # A JoinGroup v9 without a member id is answered MEMBER_ID_REQUIRED (KIP-394).
    assert (
        value(formed, "group_coordinator_errors_total", api="JoinGroup", error="MEMBER_ID_REQUIRED")
        == 2
    )

    await b.close(leave=False)  # killed: its session runs out
    expired = await wait_for(
        server,
        lambda s: (
            value(s, "group_coordinator_session_expirations_total", timer="session_timeout") == 1
        ),
    )
    assert value(expired, "group_coordinator_rebalances_total", trigger="member_expired") == 1
    # a rejoins alone; only then does its leaving start a rebalance of its own.
    await wait_for(
        server,
        lambda s: (
            value(s, "group_coordinator_groups", state="Stable") == 1
            and value(s, "group_coordinator_members") == 1
        ),
    )

    await a.close()  # leaves: the group is Empty
    empty = await wait_for(
        server, lambda s: value(s, "group_coordinator_groups", state="Empty") == 1
    )
    assert value(empty, "group_coordinator_members") == 0
    assert value(empty, "group_coordinator_groups", state="Stable") == 0
    assert value(empty, "group_coordinator_members_left_total") == 1
    assert value(empty, "group_coordinator_rebalances_total", trigger="member_left") == 1


async def test_without_metrics_listen_nothing_is_served_or_counted(tmp_path: Path) -> None:
    srv = Server(Settings(listen=("127.0.0.1", 0), store="memory", data_dir=tmp_path))
    await srv.start()
    try:
        assert srv.observability is not None
        assert srv.observability.metrics_port is None
        assert srv.runtime is not None and srv.runtime.metrics is None
        assert srv.runtime.event_sinks == []
    finally:
        await srv.stop()


def test_errors_are_counted_per_partition_in_nested_results() -> None:
    metrics = Metrics()
    request = decode_request(encode_request(OffsetCommitRequest(group_id="g"), 8, 1)[4:])
    response = OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="t",
                partitions=[
                    OffsetCommitResponsePartition(partition_index=p, error_code=code)
                    for p, code in enumerate(
                        (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID)
                    )
                ],
            )
        ]
    )
    metrics.request_answered(metrics.request_received(request.api, request.version), response, 0.0)
    errors = metrics.registry.get_sample_value(
        "group_coordinator_errors_total", {"api": "OffsetCommit", "error": "UNKNOWN_MEMBER_ID"}
    )
    assert errors == 2


@pytest.mark.parametrize("waited", [0.00005, 0.001, 0.003, 0.5, 1000.0])
def test_requests_answered_together_read_as_if_answered_one_by_one(
    waited: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compiled lane's read of many heartbeats updates each series once; a scrape must
    not tell it from the same requests counted and timed one at a time (each latency in
    the same bucket, the same sums and counts), whichever bucket the wait falls in."""
    monkeypatch.setattr(metrics_module.time, "perf_counter", lambda: 10_000.0)
    started = 10_000.0 - waited
    api = BY_KEY[12]
    exposition = []
    for bulk in (True, False):
        metrics = Metrics()
        for count, error in ((40, ErrorCode.NONE), (3, ErrorCode.REBALANCE_IN_PROGRESS)):
            if bulk:
                metrics.requests_answered_code(api, 4, error, count, started)
            else:
                for _ in range(count):
                    series = metrics.request_received(api, 4)
                    metrics.request_answered_code(series, error, started)
        exposition.append(
            {
                (s.name, tuple(sorted(s.labels.items()))): round(s.value, 6)
                for family in metrics.registry.collect()
                for s in family.samples
                if not s.name.endswith("_created")
            }
        )
    bulk_samples, single_samples = exposition
    assert bulk_samples == single_samples
    latency = "group_coordinator_request_latency_seconds"
    assert bulk_samples[(f"{latency}_count", (("api", "Heartbeat"),))] == 43
    assert bulk_samples[(f"{latency}_sum", (("api", "Heartbeat"),))] == round(43 * waited, 6)
    errors = (
        "group_coordinator_errors_total",
        (("api", "Heartbeat"), ("error", "REBALANCE_IN_PROGRESS")),
    )
    assert bulk_samples[errors] == 3


async def test_every_kind_of_limit_hit_is_counted(tmp_path: Path) -> None:
    from coordinator.client.connection import connect
    from coordinator.settings.limits import ConnectionLimits
    from protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
    from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol

    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            data_dir=tmp_path,
            topics=(("orders", 6),),
            max_topics=1,
            socket_request_max_bytes=4096,
            group=GroupConfig(initial_rebalance_delay_ms=0, max_member_metadata_bytes=10),
            limits=ConnectionLimits(max_connections_per_ip=3),
            observability=ObservabilitySettings(metrics_listen=("127.0.0.1", 0)),
        )
    )
    await srv.start()
    try:
        c = await connect("127.0.0.1", srv.port)
        # A group limit (the state machine): oversized member metadata.
        join = JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"x" * 11)],
        )
        assert (await c.request(join, 5)).error_code == ErrorCode.INVALID_REQUEST
        # A catalog limit: one topic already, max_topics=1.
        create = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name="more", num_partitions=1, replication_factor=1
                )
            ],
            timeout_ms=1000,
        )
        assert (await c.request(create, 7)).topics[0].error_code == ErrorCode.POLICY_VIOLATION
        # Connection limits: a frame over socket_request_max_bytes, one connection too many.
        _r, w = await asyncio.open_connection("127.0.0.1", srv.port)
        w.write((1 << 20).to_bytes(4, "big"))
        held = [await asyncio.open_connection("127.0.0.1", srv.port) for _ in range(3)]
        samples = await wait_for(
            srv,
            lambda s: (
                value(s, "group_coordinator_limit_hits_total", limit="max_connections_per_ip") >= 1
            ),
        )
        for limit in ("group_max_member_metadata_bytes", "max_topics", "socket_request_max_bytes"):
            assert value(samples, "group_coordinator_limit_hits_total", limit=limit) == 1, limit
        c.close()
        w.close()
        for _reader, writer in held:
            writer.close()
    finally:
        await srv.stop()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_consumer_groups_have_their_gauges_target_assignments_and_reconcile_times(
    tmp_path: Path,
) -> None:
    fast = ConsumerGroupConfig(heartbeat_interval_ms=100, min_heartbeat_interval_ms=50)
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            data_dir=tmp_path,
            topics=(("orders", 6),),
            group=GroupConfig(initial_rebalance_delay_ms=0, consumer=fast),
            observability=ObservabilitySettings(metrics_listen=("127.0.0.1", 0)),
        )
    )
    await srv.start()
    members = [
        GroupMember(f"127.0.0.1:{srv.port}", "kip848", topics=["orders"], group_protocol="consumer")
        for _ in range(2)
    ]
    try:
        for m in members:
            await m.start(10)
        settled = await wait_for(
            srv, lambda s: value(s, "group_coordinator_consumer_groups", state="Stable") == 1
        )
        assert value(settled, "group_coordinator_consumer_members") == 2
        assert value(settled, "group_coordinator_consumer_members_revoking") == 0
        assert value(settled, "group_coordinator_consumer_target_assignments_total") >= 2
        # Both members reconciled at least once (the second one after the first revoked).
        assert value(settled, "group_coordinator_consumer_reconcile_seconds_count") >= 2
        owner = next(m for m in members if m.assignment.get("orders"))
        await owner.commit({("orders", p): 1 for p in owner.assignment["orders"]})
        committed = await wait_for(
            srv, lambda s: value(s, "group_coordinator_offset_commits_total") >= 1
        )
        # The classic group that keeps a consumer group's offsets is not a group of its own.
        assert value(committed, "group_coordinator_groups", state="Empty") == 0
    finally:
        for m in members:
            await m.close()
        await srv.stop()
