"""``group-coordinator cluster status``: the cluster as the database sees it - nodes with
their leases, coordinator partitions with owners and epochs, groups per node."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import asyncpg
import click


@dataclass
class NodeStatus:
    node_id: int
    listeners: dict[str, str]
    live: bool
    lease_left_ms: int  # negative: expired that long ago
    up_s: float  # since this run of the node registered (a restart starts it again)
    console: str | None = None  # its web console's URL, if it serves one
    partitions: list[int] = field(default_factory=list)
    epochs: dict[int, int] = field(default_factory=dict)
    groups: int = 0


@dataclass
class ClusterStatus:
    nodes: list[NodeStatus]
    partitions: int
    unowned: list[int]
    groups: int


async def read_status(database_url: str) -> ClusterStatus:
    conn = await asyncpg.connect(database_url)
    try:
        nodes = {
            r["node_id"]: NodeStatus(
                r["node_id"],
                {k: f"{v[0]}:{v[1]}" for k, v in json.loads(r["listeners"]).items()},
                r["lease_left_ms"] > 0,
                int(r["lease_left_ms"]),
                round(float(r["up_s"]), 1),
                r["console_url"],
            )
            for r in await conn.fetch(
                "SELECT node_id, listeners, console_url,"
                " extract(epoch FROM lease_expires_at - now()) * 1000 AS lease_left_ms,"
                " extract(epoch FROM now() - started_at) AS up_s"
                " FROM cluster_nodes ORDER BY node_id"
            )
        }
        partitions = await conn.fetch(
            "SELECT partition, owner, epoch FROM coordinator_partitions ORDER BY partition"
        )
        groups = dict(
            await conn.fetch(
                # Groups with metadata, and simple groups known only by their offsets.
                "SELECT coordinator_partition, count(DISTINCT group_id) FROM"
                " (SELECT group_id, coordinator_partition FROM groups"
                " UNION SELECT group_id, coordinator_partition FROM offsets) AS known"
                " GROUP BY coordinator_partition"
            )
        )
    finally:
        await conn.close()
    unowned = []
    for r in partitions:
        owner = nodes.get(r["owner"])
        if owner is None or not owner.live:
            unowned.append(r["partition"])
            continue
        owner.partitions.append(r["partition"])
        owner.epochs[r["partition"]] = r["epoch"]
        owner.groups += groups.get(r["partition"], 0)
    return ClusterStatus(list(nodes.values()), len(partitions), unowned, sum(groups.values()))


def render(status: ClusterStatus) -> str:
    lines = [
        f"{len([n for n in status.nodes if n.live])} live node(s),"
        f" {status.partitions} coordinator partitions, {status.groups} group(s)",
        "",
        f"{'node':>4}  {'state':5}  {'lease':>9}  {'up':>8}  {'partitions':>10}  {'groups':>6}"
        "  epochs  listeners",
    ]
    for n in status.nodes:
        epochs = sorted(set(n.epochs.values()))
        lines.append(
            f"{n.node_id:>4}  {'live' if n.live else 'dead':5}  {n.lease_left_ms:>7}ms"
            f"  {n.up_s:>7}s  {len(n.partitions):>10}  {n.groups:>6}"
            f"  {','.join(map(str, epochs)) or '-':6}  "
            + " ".join(f"{k}://{v}" for k, v in n.listeners.items())
            + (f"  console {n.console}" if n.console else "")
        )
    if status.unowned:
        lines += ["", f"without a live owner: {status.unowned}"]
    return "\n".join(lines)


@click.group()
def cluster() -> None:
    """The nodes of a cluster sharing a PostgreSQL store."""


@cluster.command()
@click.option(
    "--database-url",
    required=True,
    envvar="GROUP_COORDINATOR_DATABASE_URL",
    show_envvar=True,
    help="the nodes' --database-url",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def status(database_url: str, as_json: bool) -> None:
    """Nodes, leases, partitions and groups per node, and epochs."""
    result = asyncio.run(read_status(database_url))
    if as_json:
        data: dict[str, Any] = asdict(result)
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render(result))
