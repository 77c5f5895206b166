"""The upstream's faults cost forwarded requests, never the daemon: down, the groups keep
heartbeating and committing and consumption resumes when it is back; an answer that is
garbage or cut halfway is an error to that request alone (docs/upstream.md)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench import servers
from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request

from .conftest import Daemon, free_port, wait_until
from .test_upstream import create_topic, produce
from .upstream_relay import UpstreamRelay

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(servers.tansu_binary() is None, reason="no tansu binary"),
]


@pytest.fixture
def relay() -> Iterator[UpstreamRelay]:
    """Tansu behind a relay: it advertises the relay's address, so the daemon reaches it
    through the relay only."""
    relay = UpstreamRelay()
    binary = servers.tansu_binary()
    assert binary is not None
    port = servers.free_port()
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{relay.port}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "error"},
    )
    tansu = servers.ServerProcess("tansu", port, proc)
    try:
        servers._wait_listening(proc, port, "tansu")
        relay.target = ("127.0.0.1", port)
        yield relay
    finally:
        relay.close()
        tansu.stop()


def front(start_daemon: Callable[..., Daemon], relay: UpstreamRelay, *args: str) -> Daemon:
    return start_daemon(
        *args,
        "--store",
        "sqlite",
        "--upstream",
        f"127.0.0.1:{relay.port}",
        "--upstream-metadata-refresh-ms",
        "500",
        "--upstream-request-timeout-ms",
        "3000",
        "--group-initial-rebalance-delay-ms",
        "0",
    )


def consumer(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def read(c: Any, count: int, timeout_s: float) -> int:
    got = 0
    deadline = time.monotonic() + timeout_s
    while got < count and time.monotonic() < deadline:
        for m in c.consume(500, 0.2):
            if m.error() is None:
                got += 1
    return got


def describe(bootstrap: str, group: str) -> Any:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)


def test_upstream_down_groups_keep_going_and_consumption_resumes(
    relay: UpstreamRelay, start_daemon: Callable[..., Daemon]
) -> None:
    from confluent_kafka import TopicPartition

    http = free_port()
    daemon = front(start_daemon, relay, "--http-listen", f"127.0.0.1:{http}")
    create_topic(daemon.bootstrap, "t", 2)
    assert produce(daemon.bootstrap, "t", 200) == 200

    def console_upstream() -> Any:
        url = f"http://127.0.0.1:{http}/api/overview"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())["upstream"]

    c = consumer(daemon.bootstrap, "g")
    c.subscribe(["t"])
    try:
        assert read(c, 200, 60) == 200
        c.commit(asynchronous=False)

        relay.set_mode("down")
        down_at = time.monotonic()
        assert read(c, 1, 3) == 0  # nothing to read, and nothing breaks
        described = describe(daemon.bootstrap, "g")
        assert len(described.members) == 1
        assert described.members[0].assignment.topic_partitions
        # A commit is the daemon's business: it does not wait for the upstream.
        c.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
        assert time.monotonic() - down_at < 10
        assert daemon.proc is not None and daemon.proc.poll() is None
        assert wait_until(lambda: console_upstream()["reachable"] is False, 20, 0.3)

        relay.set_mode("pass")
        assert produce(daemon.bootstrap, "t", 100) == 100
        assert read(c, 100, 60) == 100  # resumed, with no restart of anything
        assert wait_until(lambda: console_upstream()["reachable"] is True, 20, 0.3)
    finally:
        c.close()
    assert "upstream unreachable" in daemon.log()


def _ask(sock: socket.socket, body: Any, version: int, correlation_id: int) -> Any:
    sock.sendall(encode_request(body, version, correlation_id, "faults"))
    head = _exactly(sock, 4)
    frame = _exactly(sock, struct.unpack(">i", head)[0])
    answered, response = decode_response(BY_KEY[body.kafka.api_key], version, frame)
    assert answered == correlation_id
    return response


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the daemon closed the connection"
        data += chunk
    return data


@pytest.mark.parametrize("fault", ["garbage", "cut", "stall"])
def test_a_broken_upstream_answer_costs_that_request_only(
    relay: UpstreamRelay, start_daemon: Callable[..., Daemon], fault: str
) -> None:
    daemon = front(start_daemon, relay)
    create_topic(daemon.bootstrap, "t", 1)
    assert produce(daemon.bootstrap, "t", 10) == 10
    latest = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsTopic(
                name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
            )
        ],
    )
    with socket.create_connection(("127.0.0.1", daemon.port), 10) as sock:
        sock.settimeout(30)
        before = _ask(sock, latest, 7, 1)
        assert before.topics[0].partitions[0].error_code == 0

        relay.set_mode(fault)
        broken = _ask(sock, latest, 7, 2)
        code = broken.topics[0].partitions[0].error_code
        assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # retriable: clients try again
        assert _ask(sock, ApiVersionsRequest(), 2, 3).error_code == 0  # same connection

        relay.set_mode("pass")
        assert wait_until(
            lambda: _ask(sock, latest, 7, 4).topics[0].partitions[0].error_code == 0, 20, 0.5
        )
    assert daemon.proc is not None and daemon.proc.poll() is None


def test_upstream_topics_appearing_and_deleted_reach_a_kip848_group(
    relay: UpstreamRelay, start_daemon: Callable[..., Daemon]
) -> None:
    from confluent_kafka.admin import AdminClient

    daemon = start_daemon(
        "--store", "memory",
        "--upstream", f"127.0.0.1:{relay.port}",
        "--upstream-metadata-refresh-ms", "300",
        "--group-consumer-min-heartbeat-interval-ms", "500",
        "--group-consumer-heartbeat-interval-ms", "500",
    )  # fmt: skip
    create_topic(daemon.bootstrap, "a", 1)
    create_topic(daemon.bootstrap, "b", 2)
    c = consumer(daemon.bootstrap, "topics")
    c.subscribe(["a", "b", "later"])

    def assigned() -> set[tuple[str, int]]:
        c.poll(0.2)
        members = describe(daemon.bootstrap, "topics").members
        return {(tp.topic, tp.partition) for m in members for tp in m.assignment.topic_partitions}

    try:
        assert wait_until(lambda: assigned() == {("a", 0), ("b", 0), ("b", 1)}, 60, 0.2)
        create_topic(daemon.bootstrap, "later", 1)  # appears upstream: joins the target
        assert wait_until(lambda: ("later", 0) in assigned(), 60, 0.2)
        admin = AdminClient({"bootstrap.servers": daemon.bootstrap})
        for future in admin.delete_topics(["b"]).values():
            future.result(30)  # DeleteTopics, forwarded
        assert wait_until(lambda: assigned() == {("a", 0), ("later", 0)}, 60, 0.2)
    finally:
        c.close()


def test_a_group_request_at_an_upstream_brokers_port_is_not_coordinator(
    relay: UpstreamRelay, start_daemon: Callable[..., Daemon]
) -> None:
    """Kafka's answer at a broker that does not coordinate the group: the client asks
    FindCoordinator again, which names the daemon's own address."""
    from protocol.apis.find_coordinator import FindCoordinatorRequest
    from protocol.apis.heartbeat import HeartbeatRequest
    from protocol.apis.metadata import MetadataRequest

    daemon = front(start_daemon, relay)
    with socket.create_connection(("127.0.0.1", daemon.port), 10) as sock:
        sock.settimeout(20)
        brokers = {b.node_id: b.port for b in _ask(sock, MetadataRequest(topics=[]), 12, 1).brokers}
    broker_port = brokers[1111]  # Tansu's node 111, moved by the default offset of 1000
    with socket.create_connection(("127.0.0.1", broker_port), 10) as sock:
        sock.settimeout(20)
        beat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        assert _ask(sock, beat, 4, 1).error_code == ErrorCode.NOT_COORDINATOR
        found = _ask(sock, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, 2)
        assert (found.coordinators[0].node_id, found.coordinators[0].port) == (0, daemon.port)
