"""What a coordinator move costs one librdkafka group, with librdkafka's own debug log.

A 3-node cluster (``campaign.py``'s), one group of two confluent-kafka members, one of
them committing every 0.7 s; the node coordinating the group is faulted ``--cycles``
times (kill -9 then restart, SIGTERM then restart, or SIGSTOP for 2.5 leases), each
followed by a quiet spell in which the group's partition moves back. Printed per cycle:
the slowest commit, failed commits, rebalances, and from the members' ``debug=cgrp,broker``
log the "nodename change" closes and the FindCoordinator/Metadata answers that took over
100 ms (issue 31 item 4: such late answers set off librdkafka's coordinator loop).

Usage: ``python -m tests.chaos.moves [--kind classic|cooperative|kip848]
[--fault kill9|sigterm|sigstop] [--cycles N] [--librdkafka KEY=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.client.connection import connect
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from tests.chaos.campaign import LEASE_MS, STALL_S, Cluster
from tests.integration.clients import ConfluentMember, Member
from tests.integration.kip848_member import ConsumerProtocolMember
from tests.postgres_server import postgres_server

QUIET_S = 14.0
LATE = re.compile(r"Received (FindCoordinator|Metadata)Response .*rtt (\d+\.\d+)ms")


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def owner(cluster: Cluster, group: str) -> int | None:
    for d in cluster.nodes.values():
        if d.proc is None or d.proc.poll() is not None:
            continue
        try:
            c = await asyncio.wait_for(connect("127.0.0.1", d.port), 2)
            r = await asyncio.wait_for(
                c.request(FindCoordinatorRequest(key=group), 2, FindCoordinatorResponse), 2
            )
            c.close()
            if r.error_code == 0:
                return int(r.node_id)
        except Exception:
            continue
    return None


async def run(kind: str, fault: str, cycles: int, settings: dict[str, str]) -> None:
    collect = Collect()
    logger = logging.getLogger("librdkafka-moves")
    logger.addHandler(collect)
    logger.setLevel(logging.DEBUG)
    config: dict[str, Any] = {"debug": "cgrp,broker,protocol", "logger": logger, **settings}
    if kind == "cooperative":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    cls: type[Member] = ConsumerProtocolMember if kind == "kip848" else ConfluentMember
    group = f"moves-{kind}"
    with tempfile.TemporaryDirectory(prefix="moves-") as tmp, postgres_server() as pg:
        cluster = Cluster(Path(tmp), pg, pg.create_database("moves"))
        try:
            for n in (1, 2, 3):
                cluster.start(n)
            bootstrap = ",".join(cluster.bootstrap())
            members = [
                await asyncio.to_thread(
                    cls,
                    bootstrap,
                    group,
                    "t",
                    client_id=f"{kind}-{i}",
                    session_timeout_ms=10000,
                    config=dict(config),
                )
                for i in range(2)
            ]
            commits: list[tuple[float, float, str]] = []  # sent, answered, error
            stop = asyncio.Event()

            async def committer() -> None:
                offset = 0
                while not stop.is_set():
                    offset += 1
                    sent, error = time.monotonic(), ""
                    try:
                        await asyncio.to_thread(
                            members[0].call,
                            lambda o=offset: members[0]._commit({("t", 0): o}),
                            30,
                        )
                    except Exception as exc:
                        error = repr(exc)[:100]
                    commits.append((sent, time.monotonic(), error))
                    await asyncio.sleep(0.7)

            task = asyncio.create_task(committer())
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                all(m.assigned for m in members) and len(commits) > 3 and not commits[-1][2]
            ):
                await asyncio.sleep(0.25)
            await asyncio.sleep(2)
            for cycle in range(cycles):
                victim = await owner(cluster, group)
                assert victim is not None, "nobody names the group's coordinator"
                began, seen = time.monotonic(), len(collect.lines)
                rebalances = sum(m.rebalances for m in members)
                if fault == "kill9":
                    cluster.signal(victim, signal.SIGKILL)
                    await asyncio.sleep(LEASE_MS / 1000 + 3)
                    cluster.nodes[victim].stop(signal.SIGKILL)
                    await asyncio.to_thread(cluster.start, victim)
                elif fault == "sigterm":
                    await asyncio.to_thread(cluster.nodes[victim].stop, signal.SIGTERM)
                    await asyncio.sleep(2)
                    await asyncio.to_thread(cluster.start, victim)
                else:
                    cluster.signal(victim, signal.SIGSTOP)
                    await asyncio.sleep(STALL_S)
                    cluster.signal(victim, signal.SIGCONT)
                await asyncio.sleep(QUIET_S)
                mine = [c for c in commits if c[1] >= began]
                lines = collect.lines[seen:]
                late = [m for line in lines if (m := LATE.search(line)) and float(m[2]) > 100]
                print(
                    f"cycle {cycle + 1}: {fault} of node {victim}:"
                    f" slowest commit {max((c[1] - c[0] for c in mine), default=0):.2f} s,"
                    f" {sum(1 for c in mine if c[2])} failed,"
                    f" {sum(m.rebalances for m in members) - rebalances} rebalances,"
                    f" {sum('nodename change' in line for line in lines)} nodename-change closes,"
                    f" {len(late)} FindCoordinator/Metadata answers over 100 ms",
                    flush=True,
                )
            stop.set()
            await task
            for m in members:
                await asyncio.to_thread(m.close)
        finally:
            cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["classic", "cooperative", "kip848"], default="classic")
    parser.add_argument("--fault", choices=["kill9", "sigterm", "sigstop"], default="kill9")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--librdkafka", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    settings = dict(kv.split("=", 1) for kv in args.librdkafka)
    asyncio.run(run(args.kind, args.fault, args.cycles, settings))


if __name__ == "__main__":
    main()
