"""An upstream of several brokers: the daemon gives each an address of its own and forwards
what arrives there to that broker alone (docs/upstream.md). The upstream here is a cluster
of two of our own daemons (virtual topics, PostgreSQL), whose request metrics tell which
of them a forwarded request reached."""

from __future__ import annotations

import re
import socket
import struct
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from bench import servers
from protocol.apis import BY_KEY
from protocol.apis.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from protocol.apis.metadata import MetadataRequest
from protocol.frames import decode_response, encode_request

from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration


def ask(port: int, body: Any, version: int) -> Any:
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.settimeout(20)
        sock.sendall(encode_request(body, version, 1, "brokers"))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = sock.recv(size, socket.MSG_WAITALL)
    return decode_response(BY_KEY[body.kafka.api_key], version, frame)[1]


def list_offsets_served(metrics_port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    found = re.findall(
        r'group_coordinator_requests_total\{api="ListOffsets",[^}]*\} ([0-9.]+)', text
    )
    return sum(float(v) for v in found)


def test_each_upstream_broker_has_an_address_of_its_own(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    url = postgres.create_database("upstream")
    metrics = {node_id: free_port() for node_id in (1, 2)}

    def node(node_id: int) -> Daemon:
        return start_daemon(
            "--store", "postgres", "--database-url", url, "--node-id", str(node_id),
            "--lease-timeout-ms", "3000", "--lease-renew-interval-ms", "300",
            "--offsets-topic-num-partitions", "4", "--topic", "t:2",
            "--metrics-listen", f"127.0.0.1:{metrics[node_id]}",
        )  # fmt: skip

    upstream = {node_id: node(node_id) for node_id in (1, 2)}
    front = start_daemon(
        "--store", "memory",
        "--upstream", upstream[1].bootstrap,
        "--upstream-metadata-refresh-ms", "300",
    )  # fmt: skip

    def brokers() -> dict[int, int]:
        answer = ask(front.port, MetadataRequest(topics=None), 12)
        return {b.node_id: b.port for b in answer.brokers}

    assert wait_until(lambda: {0, 1001, 1002} <= set(brokers()), 60, 0.3), brokers()
    ports = brokers()
    assert len({ports[0], ports[1001], ports[1002]}) == 3  # three addresses of the daemon's
    latest = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsTopic(
                name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
            )
        ],
    )
    for target, other in ((1002, 1001), (1001, 1002)):
        node, other_node = target - 1000, other - 1000
        before = {n: list_offsets_served(metrics[n]) for n in (1, 2)}
        for _ in range(3):
            answer = ask(ports[target], latest, 7)
            assert answer.topics[0].partitions[0].error_code == 0
        after = {n: list_offsets_served(metrics[n]) for n in (1, 2)}
        assert after[node] - before[node] == 3  # all reached upstream node `node`...
        assert after[other_node] == before[other_node]  # ...and none the other


@pytest.mark.skipif(servers.tansu_binary() is None, reason="no tansu binary")
def test_a_cluster_of_daemons_in_front_of_one_broker_each_forwards(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    """Two nodes sharing PostgreSQL, both in front of Tansu: groups are placed on either
    as without an upstream, and each node forwards records on ports of its own."""
    from .test_upstream import ConfluentReader, committed_total, create_topic, produce, read_all

    tansu = servers.start_tansu()
    assert tansu is not None
    try:
        url = postgres.create_database("front")
        args = (
            "--store", "postgres", "--database-url", url,
            "--lease-timeout-ms", "3000", "--lease-renew-interval-ms", "300",
            "--offsets-topic-num-partitions", "4",
            "--group-initial-rebalance-delay-ms", "0",
            "--upstream", f"127.0.0.1:{tansu.port}",
            "--upstream-metadata-refresh-ms", "300",
        )  # fmt: skip
        nodes = [start_daemon(*args, "--node-id", str(node_id)) for node_id in (1, 2)]
        create_topic(nodes[0].bootstrap, "shared", 2)
        assert produce(nodes[1].bootstrap, "shared", 1000) == 1000
        for node in nodes:  # each node's own broker port, and both nodes listed

            def listed(port: int = node.port) -> set[int]:
                return {b.node_id for b in ask(port, MetadataRequest(topics=None), 12).brokers}

            # A node learns of the other at its next lease renewal.
            assert wait_until(lambda: {1, 2, 1111} <= listed(), 30, 0.3), listed()
        for i, group in enumerate(f"spread-{n}" for n in range(4)):
            seen: list[tuple[int, int]] = []
            lock = threading.Lock()
            bootstrap = nodes[i % 2].bootstrap
            read_all([ConfluentReader(bootstrap, group, "shared", seen, lock)], seen, 1000)
            assert len(seen) == len(set(seen)) == 1000, group
            assert committed_total(nodes[(i + 1) % 2].bootstrap, group, "shared", 2) == 1000
    finally:
        tansu.stop()
