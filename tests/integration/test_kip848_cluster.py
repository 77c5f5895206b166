"""KIP-848 consumers (confluent-kafka, ``group.protocol=consumer``) against a cluster of
three nodes on PostgreSQL: when the node coordinating their group is killed, the node
taking its partition over loads the group (epochs, assignments), and the consumers carry
on with the same partitions, nothing revoked, and commit again at their epochs."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.client.connection import connect

from .conftest import Daemon, wait_until
from .kip848_member import ConsumerProtocolMember
from .test_cluster import LEASE_MS, coordinator_of, node_args
from .test_cluster_clients import commit_when_served

pytestmark = pytest.mark.integration

PARTITIONS = frozenset(("t", p) for p in range(4))


def test_consumers_keep_their_partitions_when_their_coordinator_is_killed(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    url = postgres.create_database("kip848")
    fast = ("--group-consumer-heartbeat-interval-ms", "300")
    fast += ("--group-consumer-min-heartbeat-interval-ms", "100")
    nodes = {n: start_daemon(*node_args(url, n), *fast) for n in (1, 2, 3)}
    bootstrap = ",".join(d.bootstrap for d in nodes.values())
    group = "kip848-cluster"
    members = [
        ConsumerProtocolMember(bootstrap, group, "t", client_id=f"kip848-{i}") for i in range(2)
    ]
    try:

        def balanced() -> bool:
            owned = [m.assigned for m in members]
            return all(len(o) == 2 for o in owned) and frozenset().union(*owned) == PARTITIONS

        assert wait_until(balanced, 30), [m.assigned for m in members]
        owned = [m.assigned for m in members]
        revoked = [len(m.revoked) for m in members]
        mine = sorted(members[0].assigned)
        commit_when_served(members[0], dict.fromkeys(mine, 5), 10)

        async def owner() -> int:
            c = await connect("127.0.0.1", nodes[1].port)
            try:
                return await coordinator_of(c, group)
            finally:
                c.close()

        coordinator = asyncio.run(owner())
        nodes[coordinator].stop(signal.SIGKILL)
        took = commit_when_served(members[0], dict.fromkeys(mine, 9), LEASE_MS / 1000 + 10)
        print(f"committing at the member's epoch again {took:.2f}s after the kill")
        assert all(members[0].committed(tp) == 9 for tp in mine)
        time.sleep(1)  # a fenced member would lose its partitions within a heartbeat
        assert [m.assigned for m in members] == owned
        assert [len(m.revoked) for m in members] == revoked  # nothing revoked or lost
        no_errors_but_transport(members)
    finally:
        for m in members:
            m.close()


def no_errors_but_transport(members: list[ConsumerProtocolMember]) -> None:
    """The killed node's connections fail (reported by librdkafka); nothing else may."""
    from confluent_kafka import KafkaError

    transport = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}
    for m in members:
        assert m.error is None, m.error
        assert all(e.code() in transport for e in m.errors), m.errors
