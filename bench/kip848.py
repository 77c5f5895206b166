"""KIP-848 consumer groups against classic groups, in the same run, on the same daemon.

    python -m bench.kip848 [--members N] [--partitions P] [--runs R] [--quick]

* ``consumer join``: N consumer-protocol members (ConsumerGroupHeartbeat v1, one connection
  each, as consumers have: a heartbeat waits for its group's next target assignment, and a
  connection serves one request at a time) join a fresh group at once, subscribed to a topic of
  P partitions. Then every member heartbeats, reporting what it owns (having revoked what
  it was told to), round after round with no pause, until a round in which nothing moved
  and the members own every partition once. Measured: the joins (from the first sent to
  the last answered), from the last join to all members reconciled, the rounds that took,
  and the server's CPU over the whole, per member.
* ``classic join``: N classic members join a fresh group at once (JoinGroup, KIP-394 second
  JoinGroup, SyncGroup; one connection each, as a parked JoinGroup blocks its connection;
  ``bench/rebalance.py``'s measurement). From the barrier to the last SyncGroup answer, and
  the server's CPU.
* ``consumer joiner``: one more member joins the reconciled consumer group of N. Time until
  reconciled again, server CPU, and how many partitions changed owner (the joiner's share is
  P / (N + 1); a sticky assignor moves no other).

Members heartbeat as fast as they are answered, so the times are the coordinator's (and the
generator's: its CPU is reported too), not a client's heartbeat interval. Medians over the
runs. Writes ``bench/results/kip848.json`` and ``bench/results/kip848.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

from coordinator.shared.catalog import topic_id_for
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)

from . import burst, groups, rebalance
from .servers import DAEMON_ARGS, cpu_seconds, start_daemon

RESULTS = Path(__file__).parent / "results"
TOPIC = "kip848"
SESSION_MS = 6000


@dataclass
class Consumer:
    wire: groups.Wire
    group: str
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: frozenset[int] = frozenset()

    async def beat(self, topic: uuid.UUID) -> bool:
        """One heartbeat (a join at epoch 0); whether its assignment changed."""
        if self.epoch == 0:
            req = ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=0,
                rebalance_timeout_ms=60000,
                subscribed_topic_names=[TOPIC],
                topic_partitions=[],
            )
        else:
            owned = ConsumerGroupHeartbeatRequestTopicPartitions(
                topic_id=topic, partitions=sorted(self.owned)
            )
            req = ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=self.epoch,
                topic_partitions=[owned],
            )
        r: ConsumerGroupHeartbeatResponse = await self.wire.call(req)
        if r.error_code:
            raise groups.StepFailed(f"ConsumerGroupHeartbeat: error {r.error_code}")
        self.epoch = r.member_epoch
        if r.assignment is None:
            return False
        owned_now = frozenset(
            p for tp in r.assignment.topic_partitions if tp.topic_id == topic for p in tp.partitions
        )
        changed = owned_now != self.owned
        self.owned = owned_now
        return changed


def _settled(members: list[Consumer], partitions: int) -> bool:
    owned = [m.owned for m in members]
    return sum(map(len, owned)) == partitions and len(frozenset().union(*owned)) == partitions


async def _reconcile(members: list[Consumer], topic: uuid.UUID, partitions: int) -> int:
    """Heartbeat rounds until one in which nothing moved and every partition has one
    owner; returns the rounds."""
    rounds = 0
    while True:
        rounds += 1
        moved = await asyncio.gather(*(m.beat(topic) for m in members))
        if not any(moved) and _settled(members, partitions):
            return rounds
        if rounds > 100:
            raise groups.StepFailed("not reconciled after 100 rounds")


async def _consumer(port: int, pid: int, n: int, partitions: int) -> dict[str, Any]:
    wires = await burst.open_wires(port, n + 1)
    topic = topic_id_for(TOPIC)
    group = f"kip848-{n}-{time.monotonic_ns():x}"
    members = [Consumer(wires[i], group) for i in range(n)]
    try:
        cpu0, gen0, t0 = cpu_seconds(pid), time.process_time(), time.monotonic()
        await asyncio.gather(*(m.beat(topic) for m in members))
        joined = time.monotonic()
        rounds = await _reconcile(members, topic, partitions)
        done = time.monotonic()
        cpu = cpu_seconds(pid) - cpu0
        join = {
            "joins_s": joined - t0,
            "reconciled_after_last_join_s": done - joined,
            "rounds": rounds,
            "server_cpu_s": cpu,
            "server_cpu_per_member_ms": cpu / n * 1000,
            "generator_cpu_s": time.process_time() - gen0,
        }
        before = {p: i for i, m in enumerate(members) for p in m.owned}
        joiner = Consumer(wires[n], group)
        members.append(joiner)
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        await joiner.beat(topic)
        rounds = await _reconcile(members, topic, partitions)
        after = {p: i for i, m in enumerate(members) for p in m.owned}
        joined_one = {
            "seconds": time.monotonic() - t0,
            "rounds": rounds,
            "server_cpu_s": cpu_seconds(pid) - cpu0,
            "partitions_moved": sum(1 for p, owner in after.items() if before.get(p) != owner),
            "joiner_partitions": len(joiner.owned),
        }
        return {"join": join, "joiner": joined_one}
    finally:
        for w in wires:
            w.close()


def _run(members: int, partitions: int, runs: int) -> dict[str, Any]:
    args = (*DAEMON_ARGS, "--topic", f"{TOPIC}:{partitions}")
    samples: list[dict[str, Any]] = []
    with start_daemon(args=args) as daemon:
        for run in range(runs):
            # Alternate which protocol goes first, so drift hits both.
            order = ("consumer", "classic") if run % 2 == 0 else ("classic", "consumer")
            sample: dict[str, Any] = {"run": run}
            for kind in order:
                if kind == "consumer":
                    sample |= uvloop.run(_consumer(daemon.port, daemon.pid, members, partitions))
                else:
                    sample["classic"] = rebalance.run_one(
                        daemon.port, daemon.pid, members, "join", SESSION_MS
                    )
            samples.append(sample)
    return {"members": members, "partitions": partitions, "runs": samples}


def _median(samples: list[dict[str, Any]], part: str, key: str) -> float:
    return statistics.median(float(s[part][key]) for s in samples)


def _write(result: dict[str, Any], write: bool = True) -> list[str]:
    s = result["runs"]
    n, p = result["members"], result["partitions"]
    classic_s = _median(s, "classic", "seconds")
    classic_cpu = _median(s, "classic", "server_cpu_s")
    consumer_total = statistics.median(
        x["join"]["joins_s"] + x["join"]["reconciled_after_last_join_s"] for x in s
    )
    consumer_cpu = _median(s, "join", "server_cpu_s")
    after_last = _median(s, "join", "reconciled_after_last_join_s")
    lines = [
        "# KIP-848 consumer groups against classic groups",
        "",
        f"{n} members, a topic of {p} partitions, medians of {len(s)} runs"
        " (`python -m bench.kip848`; what is measured: the module's docstring).",
        "",
        "| | consumer protocol | classic protocol |",
        "|---|---|---|",
        f"| all joined and assigned (s) | {consumer_total:.2f} | {classic_s:.2f} |",
        f"| of which after the last join (s) | {after_last:.2f}"
        f" ({_median(s, 'join', 'rounds'):.0f} heartbeat rounds) | - |",
        f"| server CPU (s) | {consumer_cpu:.2f} | {classic_cpu:.2f} |",
        f"| server CPU per member (ms) | {consumer_cpu / n * 1000:.2f} |"
        f" {classic_cpu / n * 1000:.2f} |",
        f"| generator CPU (s) | {_median(s, 'join', 'generator_cpu_s'):.2f} |"
        f" {_median(s, 'classic', 'generator_cpu_s'):.2f} |",
        "",
        f"One member joining the reconciled consumer group of {n}: reconciled again in"
        f" {_median(s, 'joiner', 'seconds'):.3f} s ({_median(s, 'joiner', 'rounds'):.0f} rounds),"
        f" {_median(s, 'joiner', 'server_cpu_s'):.3f} s of server CPU;"
        f" {_median(s, 'joiner', 'partitions_moved'):.0f} partitions changed owner, the joiner"
        f" took {_median(s, 'joiner', 'joiner_partitions'):.0f} (its share: {p // (n + 1)}"
        f"-{-(-p // (n + 1))}).",
        "",
        f"Machine: {platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}; 2 shared cores.",
    ]
    if not write:
        return lines
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "kip848.json").write_text(json.dumps(result, indent=2))
    (RESULTS / "kip848.md").write_text("\n".join(lines) + "\n")
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="50 members, 1 run")
    parser.add_argument("--no-write", action="store_true", help="print, keep bench/results")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.members, opts.partitions, opts.runs = 50, 100, 1
    result = _run(opts.members, opts.partitions, opts.runs)
    failed = [r["classic"] for r in result["runs"] if "failed" in r["classic"]]
    if failed:
        raise SystemExit(f"classic measurement failed: {failed}")
    print("\n".join(_write(result, write=not opts.no_write)))
    return result


if __name__ == "__main__":
    main()
