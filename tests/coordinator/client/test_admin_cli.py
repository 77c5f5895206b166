"""``group-coordinator groups|offsets`` against the in-process daemon."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner, Result

from coordinator.client import GroupMember
from coordinator.commands import cli


def run(*args: str) -> Result:
    # CliRunner blocks; each command runs its own event loop in a worker thread.
    return CliRunner().invoke(cli.main, list(args))


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(run, *args)


async def test_list_describe_reset_and_delete(bootstrap: str) -> None:
    member = GroupMember(
        bootstrap, "cli-group", protocols=["range"], topics=["t"], heartbeat_interval_ms=200
    )
    await member.start(10)
    await member.commit({("t", 3): 7})

    listed = await invoke("groups", "list", "--bootstrap", bootstrap, "--json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)[0]["group"] == "cli-group"
    stable_only = await invoke("groups", "list", "--bootstrap", bootstrap, "--state", "Empty")
    assert "cli-group" not in stable_only.output

    described = await invoke("groups", "describe", "cli-group", "--bootstrap", bootstrap)
    assert described.exit_code == 0, described.output
    assert "Stable" in described.output and "range" in described.output
    assert "t-0,t-1" in described.output and "/127.0.0.1" in described.output
    as_json = json.loads(
        (await invoke("groups", "describe", "cli-group", "--bootstrap", bootstrap, "--json")).output
    )
    assert as_json["members"][0]["assignment"] == {"t": list(range(12))}
    # DescribeGroups carries no generation or leader: no always-empty columns or keys.
    assert not {"generation", "leader"} & set(as_json)
    assert "GENERATION" not in described.output and "LEADER" not in described.output

    refused = await invoke(
        "offsets", "reset", "cli-group", "--topic", "t", "--to-earliest", "--bootstrap", bootstrap
    )
    assert refused.exit_code != 0 and "inactive" in refused.output and "Stable" in refused.output

    await member.close()
    reset = await invoke(
        "offsets",
        "reset",
        "cli-group",
        "--topic",
        "t",
        "--to-offset",
        "0",
        "--bootstrap",
        bootstrap,
    )
    assert reset.exit_code == 0, reset.output
    assert "clamped" not in reset.output  # 0 is inside every partition's range
    beyond = await invoke(
        "offsets",
        "reset",
        "cli-group",
        "--topic",
        "t",
        "--to-offset",
        "5",
        "--bootstrap",
        bootstrap,
    )
    assert beyond.exit_code == 0, beyond.output
    assert "--to-offset 5 is outside the range of partition(s) 0, 1," in beyond.output
    assert "clamped to the nearest end" in beyond.output  # virtual topics: 0 is their end
    offsets = json.loads(
        (await invoke("offsets", "get", "cli-group", "--bootstrap", bootstrap, "--json")).output
    )
    assert {(o["partition"], o["offset"]) for o in offsets} == {(p, 0) for p in range(12)}
    table = await invoke("offsets", "get", "cli-group", "--bootstrap", bootstrap)
    assert table.output.splitlines()[0].split() == [
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "METADATA",
    ]

    deleted = await invoke("groups", "delete", "cli-group", "--bootstrap", bootstrap)
    assert deleted.exit_code == 0, deleted.output
    gone = await invoke("groups", "describe", "cli-group", "--bootstrap", bootstrap, "--json")
    assert gone.exit_code == 1  # as kafka-consumer-groups.sh
    assert "Consumer group 'cli-group' does not exist." in gone.output


async def test_reset_needs_exactly_one_target(bootstrap: str) -> None:
    result = await invoke("offsets", "reset", "g", "--topic", "t", "--bootstrap", bootstrap)
    assert result.exit_code == 2 and "exactly one" in result.output


async def test_unreachable_bootstrap_is_a_clear_error() -> None:
    result = await invoke("groups", "list", "--bootstrap", "127.0.0.1:1")
    assert result.exit_code == 1 and "cannot connect" in result.output
