"""Bursts of joins: N consumer-protocol members (KIP-848) joining a group at once, with
Kafka's default timeouts, side by side with N classic members in the same run.

    python -m bench.burst [--members 1000,2000,5000,10000] [--runs R] [--quick] [--src DIR]

* ``consumer``: N members, one connection each (as a consumer has its own connection to
  the coordinator), join at once (ConsumerGroupHeartbeat at epoch 0), subscribed to a topic
  of 2N partitions. Each then behaves as Kafka's Java consumer does: it heartbeats again at
  once after an answer that changed its assignment (it acknowledges the change), otherwise
  after the heartbeat interval the coordinator gave (5 s by default; session 45 s); a
  member told FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID rejoins at epoch 0 and is counted as
  fenced. Measured: from the barrier until every member is reconciled (all at the group's
  epoch, owning every partition once), how long that is after the last join was answered,
  how many members were fenced, the server's CPU (and the generator's).
* ``classic``: N classic members join a fresh group at once (``bench/rebalance.py``'s
  measurement: JoinGroup, the KIP-394 second JoinGroup, SyncGroup), 45 s session timeout.

Goals (issue 30): no member fenced; reconciled within 2 s of the last join up to 5,000;
consumer server CPU per member at most 2x classic's at the same N; growth exponent of the
consumer server CPU from the smallest to the largest N at most 1.2. Writes
``bench/results/burst.json`` and ``bench/results/burst.md``. ``--src`` runs the daemon
from another source tree (an older checkout) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import platform
import statistics
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import uvloop

from coordinator.shared.catalog import topic_id_for
from protocol.apis.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.errors import ErrorCode

from . import groups, rebalance
from .servers import DAEMON_ARGS, cpu_seconds, start_daemon

RESULTS = Path(__file__).parent / "results"
TOPIC = "burst"
#: Kafka's defaults: session.timeout.ms 45 s (classic), max.poll.interval.ms 300 s (the
#: consumer protocol's rebalance timeout).
CLASSIC_SESSION_MS = 45000
REBALANCE_TIMEOUT_MS = 300000
FENCED = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)
#: Given up after this long without every member reconciled.
LIMIT_S = 300.0


class Tracker:
    """Every member's epoch and partitions as last answered, kept as counts so that
    "all reconciled" is known after each answer without a scan."""

    def __init__(self, members: int, partitions: int) -> None:
        self.members = members
        self.partitions = partitions
        self.epochs: Counter[int] = Counter()
        self.holders: Counter[int] = Counter()  # partition -> members holding it
        self.once = 0  # partitions held by exactly one member
        self.fenced = 0
        self.last_join_sent = 0.0
        self.last_join_answered = 0.0
        self.joined = 0
        self.settled = asyncio.get_running_loop().create_future()

    def moved(self, old_epoch: int, new_epoch: int, old: frozenset[int], new: frozenset[int]):
        if old_epoch != new_epoch:
            self.epochs[old_epoch] -= 1
            if not self.epochs[old_epoch]:
                del self.epochs[old_epoch]
            self.epochs[new_epoch] += 1
        for p in old - new:
            n = self.holders[p] = self.holders[p] - 1
            self.once += (n == 1) - (n == 0)
        for p in new - old:
            n = self.holders[p] = self.holders[p] + 1
            self.once += (n == 1) - (n == 2)

    def check(self) -> None:
        if (
            self.joined == self.members
            and self.once == self.partitions
            and len(self.epochs) == 1
            and sum(self.holders.values()) == self.partitions
            and not self.settled.done()
        ):
            self.settled.set_result(time.monotonic())


class Member:
    def __init__(
        self, wire: groups.Wire, group: str, name: str, topic: uuid.UUID, t: Tracker
    ) -> None:
        self.wire, self.group, self.name, self.topic, self.t = wire, group, name, topic, t
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.owned: frozenset[int] = frozenset()
        self.joined = False
        t.epochs[0] += 1

    def _request(self) -> ConsumerGroupHeartbeatRequest:
        if self.epoch == 0:
            return ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=0,
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                subscribed_topic_names=[self.name],
                topic_partitions=[],
            )
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            topic_partitions=[
                ConsumerGroupHeartbeatRequestTopicPartitions(
                    topic_id=self.topic, partitions=sorted(self.owned)
                )
            ],
        )

    async def run(self) -> None:
        t = self.t
        while True:
            if not self.joined:
                t.last_join_sent = time.monotonic()  # the write happens before the await
            r: ConsumerGroupHeartbeatResponse = await self.wire.call(self._request())
            if r.error_code in FENCED:
                # As a consumer does: give up its partitions and join again, at once.
                t.fenced += 1
                t.moved(self.epoch, 0, self.owned, frozenset())
                self.epoch, self.owned = 0, frozenset()
                continue
            if r.error_code:
                raise groups.StepFailed(f"ConsumerGroupHeartbeat: error {r.error_code}")
            owned = self.owned
            if r.assignment is not None:
                owned = frozenset(
                    p
                    for tp in r.assignment.topic_partitions
                    if tp.topic_id == self.topic
                    for p in tp.partitions
                )
            changed = owned != self.owned
            t.moved(self.epoch, r.member_epoch, self.owned, owned)
            self.epoch, self.owned = r.member_epoch, owned
            if not self.joined:
                self.joined = True
                t.joined += 1
                t.last_join_answered = time.monotonic()
            t.check()
            if not changed:
                await asyncio.sleep(r.heartbeat_interval_ms / 1000)


async def open_wires(port: int, n: int) -> list[groups.Wire]:
    """N connections, versions negotiated once, opened 500 at a time (faster overflows the
    server's listen queue: rebalance.py)."""
    first = await groups.open_wire(port)
    wires = [first]
    while len(wires) < n:
        batch = min(500, n - len(wires))
        wires += await asyncio.gather(
            *(groups.open_wire(port, first.versions) for _ in range(batch))
        )
    return wires


async def _consumer(port: int, pid: int, n: int, partitions: int, limit_s: float) -> dict[str, Any]:
    wires = await open_wires(port, n)
    topic = topic_id_for(f"{TOPIC}-{n}")
    group = f"burst-{n}-{time.monotonic_ns():x}"
    t = Tracker(n, partitions)
    members = [Member(w, group, f"{TOPIC}-{n}", topic, t) for w in wires]
    gc.freeze()
    tasks: list[asyncio.Task[None]] = []
    try:
        cpu0, gen0, t0 = cpu_seconds(pid), time.process_time(), time.monotonic()
        tasks = [asyncio.ensure_future(m.run()) for m in members]
        failed = asyncio.ensure_future(asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION))
        await asyncio.wait([t.settled, failed], timeout=limit_s, return_when="FIRST_COMPLETED")
        if not t.settled.done():
            errors = [str(x.exception()) for x in tasks if x.done() and x.exception()]
            return {"members": n, "failed": errors[:1] or [f"not reconciled in {limit_s:g} s"]}
        settled = t.settled.result()
        cpu = cpu_seconds(pid) - cpu0
        gen = time.process_time() - gen0
        # Outside the measurement: what the coordinator says of the group.
        described: ConsumerGroupDescribeResponse = await wires[0].call(
            ConsumerGroupDescribeRequest(group_ids=[group])
        )
        [g] = described.groups
        return {
            "members": n,
            "partitions": partitions,
            "fenced": t.fenced,
            "last_join_sent_s": t.last_join_sent - t0,
            "joins_answered_s": t.last_join_answered - t0,
            "reconciled_s": settled - t0,
            "reconciled_after_last_join_s": settled - t.last_join_sent,
            "server_cpu_s": cpu,
            "server_cpu_per_member_ms": cpu / n * 1000,
            "generator_cpu_s": gen,
            "group_epoch": next(iter(t.epochs)),
            "server_state": g.group_state,
            "server_epochs": [g.group_epoch, g.assignment_epoch],
        }
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in members:  # outside the measurement: they leave, as closing consumers do
            if m.epoch > 0:
                m.epoch = -1
        await asyncio.gather(
            *(m.wire.call(_leave(m)) for m in members if m.epoch == -1), return_exceptions=True
        )
        for w in wires:
            w.close()
        gc.unfreeze()


def _leave(m: Member) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id=m.group, member_id=m.member_id, member_epoch=-1)


def _run(
    sizes: list[int], runs: int, src: Path | None, limit_s: float, extra: list[str]
) -> dict[str, Any]:
    # One daemon, one topic of 2N partitions per size N.
    topics = [arg for n in sizes for arg in ("--topic", f"{TOPIC}-{n}:{2 * n}")]
    out: dict[str, Any] = {"sizes": {}}
    with start_daemon(src=src, args=(*DAEMON_ARGS, *topics, *extra)) as daemon:
        for n in sizes:
            samples = []
            for run in range(runs):
                # Alternate which protocol goes first, so drift hits both.
                sample: dict[str, Any] = {"run": run}
                for kind in ("consumer", "classic") if run % 2 == 0 else ("classic", "consumer"):
                    if kind == "consumer":
                        sample["consumer"] = uvloop.run(
                            _consumer(daemon.port, daemon.pid, n, 2 * n, limit_s)
                        )
                    else:
                        sample["classic"] = rebalance.run_one(
                            daemon.port, daemon.pid, n, "join", CLASSIC_SESSION_MS
                        )
                samples.append(sample)
                print(json.dumps(sample), flush=True)
            out["sizes"][str(n)] = samples
    return out


def _median(samples: list[dict[str, Any]], part: str, key: str) -> float:
    values = [float(s[part][key]) for s in samples if key in s[part]]
    return statistics.median(values) if values else math.nan


def summary(result: dict[str, Any]) -> dict[str, Any]:
    rows = {}
    for n, samples in result["sizes"].items():
        consumer_cpu = _median(samples, "consumer", "server_cpu_s")
        classic_cpu = _median(samples, "classic", "server_cpu_s")
        rows[n] = {
            "fenced": max(int(s["consumer"].get("fenced", -1)) for s in samples),
            "failed": [
                s[k]["failed"] for s in samples for k in ("consumer", "classic") if "failed" in s[k]
            ],
            "last_join_sent_s": _median(samples, "consumer", "last_join_sent_s"),
            "reconciled_s": _median(samples, "consumer", "reconciled_s"),
            "after_last_join_s": _median(samples, "consumer", "reconciled_after_last_join_s"),
            "consumer_cpu_s": consumer_cpu,
            "consumer_cpu_per_member_ms": consumer_cpu / int(n) * 1000,
            "classic_s": _median(samples, "classic", "seconds"),
            "classic_cpu_s": classic_cpu,
            "classic_cpu_per_member_ms": classic_cpu / int(n) * 1000,
            "cpu_ratio": consumer_cpu / classic_cpu if classic_cpu else math.nan,
            "generator_cpu_s": _median(samples, "consumer", "generator_cpu_s"),
            "server_states": sorted({str(s["consumer"].get("server_state")) for s in samples}),
        }
    sizes = sorted(rows, key=int)
    growth = {}
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        scale = math.log(int(hi) / int(lo))
        for kind in ("consumer", "classic"):
            a, b = rows[lo][f"{kind}_cpu_s"], rows[hi][f"{kind}_cpu_s"]
            growth[kind] = math.log(b / a) / scale if a > 0 and b > 0 else math.nan
    return {"rows": rows, "growth": growth, "from": sizes[0], "to": sizes[-1]}


def _write(result: dict[str, Any], write: bool) -> list[str]:
    s = summary(result)
    lines = [
        "# Bursts of joins: KIP-848 consumer groups against classic groups",
        "",
        f"N members joining one group at once, a topic of 2N partitions, Kafka's default"
        f" timeouts (consumer protocol: 45 s session, 5 s heartbeat; classic: 45 s session),"
        f" medians of {result['runs']} run(s) (`python -m bench.burst`; what is measured: the"
        " module's docstring).",
        "",
        "| N | fenced | all joins sent (s) | reconciled (s) | after the last join (s) |"
        " consumer CPU/member (ms) | classic: formed (s) | classic CPU/member (ms) | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, r in sorted(s["rows"].items(), key=lambda kv: int(kv[0])):
        lines.append(
            f"| {int(n):,} | {r['fenced']} | {r['last_join_sent_s']:.2f} |"
            f" {r['reconciled_s']:.2f} |"
            f" {r['after_last_join_s']:.2f} | {r['consumer_cpu_per_member_ms']:.3f} |"
            f" {r['classic_s']:.2f} | {r['classic_cpu_per_member_ms']:.3f} |"
            f" {r['cpu_ratio']:.2f} |"
        )
        if r["failed"]:
            lines.append(f"| | failed: {r['failed']} | | | | | | | |")
    states = {state for r in s["rows"].values() for state in r["server_states"]}
    lines += [
        "",
        "The coordinator described each consumer group, once its members had seen it"
        f" reconciled, as: {', '.join(sorted(states))}.",
    ]
    if s["growth"]:
        lines += [
            "",
            f"Growth exponent of the server CPU from {int(s['from']):,} to {int(s['to']):,}"
            f" members: consumer protocol {s['growth']['consumer']:.2f}, classic"
            f" {s['growth']['classic']:.2f}.",
        ]
    lines += [
        "",
        f"Source: {' '.join([result['source'], *result.get('daemon_args', [])])}. Machine:"
        f" {platform.machine()},"
        f" {platform.python_implementation()} {platform.python_version()}; 2 shared cores.",
    ]
    if write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "burst.json").write_text(json.dumps(result | {"summary": s}, indent=2))
        (RESULTS / "burst.md").write_text("\n".join(lines) + "\n")
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="1000,2000,5000,10000")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="20 and 40 members, 1 run")
    parser.add_argument("--src", type=Path, help="run the daemon from this source tree")
    parser.add_argument("--limit", type=float, default=LIMIT_S, help="give up after (s)")
    parser.add_argument(
        "--assignment-interval-ms", type=int, help="the daemon's, if not its default"
    )
    parser.add_argument("--no-write", action="store_true", help="print, keep bench/results")
    opts = parser.parse_args(argv)
    sizes = [20, 40] if opts.quick else [int(x) for x in opts.members.split(",")]
    extra = []
    if opts.assignment_interval_ms is not None:
        extra = ["--group-consumer-assignment-interval-ms", str(opts.assignment_interval_ms)]
    result = _run(sizes, 1 if opts.quick else opts.runs, opts.src, opts.limit, extra)
    result |= {
        "runs": 1 if opts.quick else opts.runs,
        "source": str(opts.src or "this tree"),
        "daemon_args": extra,
    }
    print("\n".join(_write(result, write=not opts.no_write)))
    return result


if __name__ == "__main__":
    main()
