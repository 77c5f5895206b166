"""A cluster you can see (issue 33): every node's console lists the whole cluster's groups,
each with the node that coordinates it and a working link to that node's console; a node
asked for a group it does not hold names and links its coordinator; the admin CLI gets
past a dead bootstrap address and a dead coordinator and names the coordinator; and
``cluster status`` shows a restarted node's uptime from its restart."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from click.testing import CliRunner

from coordinator.client.connection import connect
from coordinator.cluster.status import read_status
from coordinator.commands import cli
from protocol.errors import ErrorCode

from .conftest import Daemon, free_port, wait_until
from .test_cluster import GROUPS, node_args, simple_commit, spread

pytestmark = pytest.mark.integration


def start_nodes(
    start_daemon: Callable[..., Daemon], postgres: Any, n: int, label: str
) -> tuple[dict[int, Daemon], dict[int, int], str]:
    """``n`` nodes, each with its console; (nodes, console ports, database URL)."""
    url = postgres.create_database(label)
    consoles = {node_id: free_port() for node_id in range(1, n + 1)}
    nodes = {
        node_id: start_daemon(*node_args(url, node_id), "--http-listen", f"127.0.0.1:{port}")
        for node_id, port in consoles.items()
    }
    return nodes, consoles, url


async def settled(url: str, nodes: int) -> None:
    """Until every partition is owned and the shares are even: the nodes started one after
    the other, and the first ones hand partitions over to each newcomer."""
    for _ in range(200):
        status = await read_status(url)
        shares = [len(n.partitions) for n in status.nodes if n.live]
        if len(shares) == nodes and not status.unowned and max(shares) - min(shares) <= 1:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"placement did not settle: {status}")


async def commit_everywhere(nodes: dict[int, Daemon], url: str) -> dict[str, int]:
    """Every group of GROUPS made (a commit at its coordinator), once the placement has
    settled; group -> its node."""
    await settled(url, len(nodes))
    owners = await spread(nodes)
    for group, owner in owners.items():
        c = await connect("127.0.0.1", nodes[owner].port)
        assert await simple_commit(c, group, 5) == {ErrorCode.NONE}
        c.close()
    return owners


def group_page(console_port: int, group: str) -> str:
    return f"http://127.0.0.1:{console_port}/group?{urlencode({'id': group})}"


def cluster_status(url: str) -> dict[int, dict[str, Any]]:
    shown = CliRunner().invoke(cli.main, ["cluster", "status", "--database-url", url, "--json"])
    assert shown.exit_code == 0, shown.output
    return {n["node_id"]: n for n in json.loads(shown.output)["nodes"]}


def test_a_cluster_is_seen_whole_from_any_nodes_console_and_from_the_cli(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    """One 3-node cluster for both (starting one takes seconds)."""
    nodes, consoles, url = start_nodes(start_daemon, postgres, 3, "cluster_console")
    owners = asyncio.run(commit_everywhere(nodes, url))
    every_console_lists_every_group_with_its_coordinator_and_a_link(nodes, consoles, owners)
    the_cli_gets_past_a_dead_node_and_a_restarted_nodes_uptime_restarts(
        nodes, consoles, url, owners
    )


def every_console_lists_every_group_with_its_coordinator_and_a_link(
    nodes: dict[int, Daemon], consoles: dict[int, int], owners: dict[str, int]
) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:

            async def listed(node_id: int) -> dict[str, Any]:
                """The node's groups API, once it lists every group (the other nodes'
                are read from the database at most 2 s late)."""
                rows: dict[str, Any] = {}
                for _ in range(100):
                    base = f"http://127.0.0.1:{consoles[node_id]}"
                    async with http.get(f"{base}/api/groups?page_size=500") as resp:
                        assert resp.status == 200
                        rows = {g["id"]: g for g in (await resp.json())["groups"]}
                    if set(GROUPS) <= set(rows) and all(
                        rows[g]["coordinator"] and rows[g]["coordinator"]["console_url"]
                        for g in GROUPS
                    ):
                        return rows
                    await asyncio.sleep(0.1)
                raise AssertionError(f"node {node_id} lists {sorted(rows)}")

            for node_id in nodes:
                rows = await listed(node_id)
                for group in GROUPS:
                    shown, owner = rows[group], owners[group]
                    assert shown["coordinator"]["node_id"] == owner
                    assert shown["coordinator"]["this"] == (owner == node_id)
                    expected = None if owner == node_id else group_page(consoles[owner], group)
                    assert shown["url"] == expected
                    assert shown["state"] == "Empty"
                base = f"http://127.0.0.1:{consoles[node_id]}"
                async with http.get(f"{base}/groups?page_size=500") as resp:
                    text = await resp.text()
                for group in GROUPS:
                    owner = owners[group]
                    if owner != node_id:  # the page links the owner's console
                        href = group_page(consoles[owner], group).replace("&", "&amp;")
                        assert f'<a href="{href}" data-node="{owner}">node {owner}</a>' in text
                async with http.get(f"{base}/api/overview") as resp:
                    overview = await resp.json()
                assert overview["groups"] == len(GROUPS)
                assert {n["node_id"]: n["console_url"] for n in overview["nodes"]} == {
                    n: f"http://127.0.0.1:{port}/" for n, port in consoles.items()
                }
                assert sum(n["groups"] for n in overview["nodes"]) == len(GROUPS)
                async with http.get(f"{base}/") as resp:  # its partitions, as events say
                    assert "groups loaded in" in await resp.text()

            # The link works: the owner's console shows the group with its offsets.
            group = next(g for g in GROUPS if owners[g] == 2)
            link = (await listed(1))[group]["url"]
            async with http.get(link) as resp:
                assert resp.status == 200
                page = await resp.text()
            assert 'data-offset="t-0"' in page and "Committed offsets" in page
            # Asked directly, a node that does not hold the group names and links its owner.
            async with http.get(group_page(consoles[1], group)) as resp:
                assert resp.status == 200
                elsewhere = await resp.text()
            assert "coordinated by <strong>node 2</strong>" in elsewhere
            href = group_page(consoles[2], group).replace("&", "&amp;")
            assert f'<a id="coordinator-link" href="{href}">' in elsewhere
            async with http.get(f"http://127.0.0.1:{consoles[1]}/api/groups/{group}") as resp:
                assert resp.status == 404
                answer = await resp.json()
            assert answer["coordinator"]["node_id"] == 2 and answer["url"] == group_page(
                consoles[2], group
            )

    asyncio.run(scenario())


def the_cli_gets_past_a_dead_node_and_a_restarted_nodes_uptime_restarts(
    nodes: dict[int, Daemon], console_ports: dict[int, int], url: str, owners: dict[str, int]
) -> None:
    lost = next(g for g in GROUPS if owners[g] == 2)
    kept = next(g for g in GROUPS if owners[g] == 1)
    runner = CliRunner()
    at_node_1 = ["--bootstrap", nodes[1].bootstrap]
    described = runner.invoke(cli.main, ["groups", "describe", kept, *at_node_1, "--json"])
    assert described.exit_code == 0, described.output
    assert json.loads(described.stdout)["coordinator"] == {
        "node_id": 1, "host": "127.0.0.1", "port": nodes[1].port,
    }  # fmt: skip
    text = runner.invoke(cli.main, ["groups", "describe", kept, *at_node_1])
    assert f"127.0.0.1:{nodes[1].port} (node 1)" in text.stdout

    consoles = {n: s["console"] for n, s in cluster_status(url).items()}
    assert consoles == {n: f"http://127.0.0.1:{port}/" for n, port in console_ports.items()}
    while (up_before := cluster_status(url)[2]["up_s"]) < 3:
        time.sleep(0.2)
    dead = nodes[2].bootstrap
    nodes[2].stop(signal.SIGKILL)  # within its lease, the other node still lists it
    both = f"{dead},{nodes[1].bootstrap}"  # the dead address first
    listed = runner.invoke(cli.main, ["groups", "list", "--bootstrap", both])
    assert listed.exit_code == 0, listed.output
    assert kept in listed.stdout
    # Its groups move to the others once its lease runs out: describe waits for that.
    described = runner.invoke(cli.main, ["groups", "describe", lost, "--bootstrap", both, "--json"])
    assert described.exit_code == 0, described.output
    assert json.loads(described.stdout)["coordinator"]["node_id"] in (1, 3)

    def every_group_listed() -> bool:
        listed = runner.invoke(cli.main, ["groups", "list", "--bootstrap", both, "--json"])
        assert listed.exit_code == 0, listed.output
        return {g["group"] for g in json.loads(listed.stdout)} == set(GROUPS)

    assert wait_until(every_group_listed, 10, 0.2)  # once the others have loaded them

    nodes[2].start()  # the same node id again, its row still in the database
    restarted = time.monotonic()
    up_after = cluster_status(url)[2]["up_s"]
    # Since this start (it registered just before it listened), not since the first one.
    assert up_after <= time.monotonic() - restarted + 1.0, (up_before, up_after)
    assert up_after < up_before
