"""``group-coordinator groups describe|list`` show a KIP-848 consumer group: its assignor,
epochs, and each member's epoch with its current and target assignment."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner, Result

from coordinator.client.connection import connect
from coordinator.commands import cli
from coordinator.shared.catalog import topic_id_for
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(lambda: CliRunner().invoke(cli.main, list(args)))


async def test_describe_and_list_a_consumer_group(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    c = await connect(host, int(port))
    for member in ("m-1", "m-2"):
        join = ConsumerGroupHeartbeatRequest(
            group_id="kip848",
            member_id=member,
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        r = await c.request(join, 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == 0
    c.close()
    assert topic_id_for("t")  # the wire carried ids; the CLI shows names

    described = await invoke("groups", "describe", "kip848", "--bootstrap", bootstrap, "--json")
    assert described.exit_code == 0, described.output
    d = json.loads(described.output)
    assert (d["type"], d["state"], d["protocol"]) == ("consumer", "Reconciling", "uniform")
    assert (d["group_epoch"], d["assignment_epoch"]) == (2, 2)
    by_id = {m["member_id"]: m for m in d["members"]}
    assert by_id["m-1"]["assignment"] == {"t": list(range(12))}  # not yet told to revoke
    assert by_id["m-2"]["assignment"] == {} and by_id["m-2"]["member_epoch"] == 2
    targets = [by_id[m]["target_assignment"]["t"] for m in ("m-1", "m-2")]
    assert sorted(targets[0] + targets[1]) == list(range(12)) and len(targets[0]) == 6

    table = await invoke("groups", "describe", "kip848", "--bootstrap", bootstrap)
    assert "ASSIGNMENT-EPOCH" in table.output and "TARGET" in table.output
    listed = await invoke("groups", "list", "--bootstrap", bootstrap, "--json")
    assert json.loads(listed.output) == [
        {"group": "kip848", "protocol_type": "consumer", "state": "Reconciling", "type": "consumer"}
    ]
