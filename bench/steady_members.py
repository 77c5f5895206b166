"""10,000 consumer-protocol (KIP-848) members heartbeating at Kafka's default 5 s interval
against 10,000 classic members at their 3 s interval: the daemon's CPU in each steady
state, in one run (issue 40's third benchmark).

    python -m bench.steady_members [--members 10000] [--seconds 20] [--rounds 3] [--quick]

One daemon (memory store) holds both populations, in groups of ten: the consumer groups
subscribe to a topic of 20 partitions (two per member) and are reconciled (every member at
its group's target, as after any rebalance); the classic groups are Stable. Sessions are
long (300 s) so that each population can be quiet while the other one is measured.

Members are simulated by a raw-protocol generator (this process, uvloop) over a bounded
number of connections (``--connections`` per population; Kafka clients may send many
members' requests on one connection): each connection sends its members' heartbeats spread
evenly over their interval, a slice every 100 ms. A consumer member sends what a
reconciled Java consumer sends (ConsumerGroupHeartbeat v1 with group, member id and epoch
only) every ``heartbeat_interval_ms`` the daemon answered (5,000 by default, Kafka's
group.consumer.heartbeat.interval.ms); a classic member a Heartbeat v4 every 3 s
(Kafka's heartbeat.interval.ms). Every answer is decoded and its error counted.

After one interval of heartbeats of each population (a warm-up), phases of ``--seconds``
each, in an order that rotates from round to round: ``consumer``
(only the consumer members heartbeat), ``classic`` (only the classic ones), ``idle``
(nobody: the daemon's own floor). Measured over each phase but its first second: the
daemon's CPU (``/proc``, all threads) per second (cores used), per heartbeat, the
heartbeats answered per second, and the load average. Medians over rounds; the ratios are
taken within each round. Writes ``bench/results/steady_members.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

from coordinator.shared.catalog import topic_id_for
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.heartbeat import HeartbeatResponse
from protocol.frames import FrameSplitter, decode_response, encode_request

from . import burst, kip848, load, scale
from .servers import cpu_seconds, start_daemon

RESULTS = Path(__file__).parent / "results"
GROUP_SIZE = 10
#: The formation connections' client id (``groups.open_wire``): the steady heartbeats keep it
#: (a member whose client id changes has it written to its record, by the general path).
CLIENT_ID = "group-coordinator-client"
PARTITIONS = 20
CLASSIC_INTERVAL_S = 3.0
TICK_S = 0.1
SESSION_MS = 300_000
DAEMON_ARGS = (
    "--store",
    "memory",
    "--topic",
    f"{kip848.TOPIC}:{PARTITIONS}",
    "--group-initial-rebalance-delay-ms",
    "0",
    "--group-consumer-session-timeout-ms",
    str(SESSION_MS),
    "--group-consumer-max-session-timeout-ms",
    str(SESSION_MS),
    "--max-connections-per-ip",
    "20000",
    "--log-level",
    "WARNING",
)


class Heartbeats(asyncio.Protocol):
    """One connection's members: their frames, sent a slice per tick, answers counted."""

    def __init__(self, frames: list[bytes], api_key: int, version: int) -> None:
        self.frames, self.api, self.version = frames, BY_KEY[api_key], version
        self.next = 0
        self.splitter = FrameSplitter()
        self.transport: asyncio.Transport | None = None
        self.answered = 0
        self.errors: dict[int, int] = {}
        self.interval_s = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, count: int) -> None:
        assert self.transport is not None
        frames, n = self.frames, len(self.frames)
        batch = []
        for _ in range(count):
            batch.append(frames[self.next])
            self.next = (self.next + 1) % n
        self.transport.write(b"".join(batch))

    def data_received(self, data: bytes) -> None:
        for frame in self.splitter.feed(data):
            self.answered += 1
            _, body = decode_response(self.api, self.version, frame)
            assert isinstance(body, HeartbeatResponse | ConsumerGroupHeartbeatResponse)
            if body.error_code:
                self.errors[body.error_code] = self.errors.get(body.error_code, 0) + 1


async def _connections(
    port: int, frames: list[bytes], count: int, api_key: int, version: int, interval_s: float
) -> list[Heartbeats]:
    loop = asyncio.get_running_loop()
    out = []
    for i in range(count):
        share = frames[i::count]
        if not share:
            continue
        _, conn = await loop.create_connection(
            partial(Heartbeats, share, api_key, version), "127.0.0.1", port
        )
        conn.interval_s = interval_s
        out.append(conn)
    return out


async def _pace(conns: list[Heartbeats], seconds: float) -> None:
    """Each connection sends its members' heartbeats evenly over their interval."""
    owed = [0.0] * len(conns)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i, c in enumerate(conns):
            owed[i] += len(c.frames) * TICK_S / c.interval_s
            whole = int(owed[i])
            if whole:
                owed[i] -= whole
                c.send(whole)
        await asyncio.sleep(TICK_S)


async def consumer_members(port: int, n: int, wires_at_once: int) -> tuple[list[bytes], int]:
    """``n`` reconciled consumer members in groups of ten: their steady heartbeat frames,
    and the heartbeat interval the daemon gave them."""
    topic = topic_id_for(kip848.TOPIC)
    wires = await burst.open_wires(port, wires_at_once)
    frames: list[bytes] = []
    interval = 0
    try:
        per_batch = max(1, wires_at_once // GROUP_SIZE)
        groups = (n + GROUP_SIZE - 1) // GROUP_SIZE
        for first in range(0, groups, per_batch):
            batch = []
            for k, g in enumerate(range(first, min(first + per_batch, groups))):
                size = min(GROUP_SIZE, n - g * GROUP_SIZE)
                ws = wires[k * GROUP_SIZE : k * GROUP_SIZE + size]
                batch.append([kip848.Consumer(w, f"steady-consumer-{g}") for w in ws])
            await asyncio.gather(*(_join_and_reconcile(ms, topic) for ms in batch))
            for ms in batch:
                for m in ms:
                    steady = ConsumerGroupHeartbeatRequest(
                        group_id=m.group, member_id=m.member_id, member_epoch=m.epoch
                    )
                    frames.append(encode_request(steady, 1, len(frames), CLIENT_ID))
            interval = interval or await _interval(batch[0][0])
    finally:
        for w in wires:
            w.close()
    return frames, interval


async def _join_and_reconcile(members: list[kip848.Consumer], topic: Any) -> None:
    await asyncio.gather(*(m.beat(topic) for m in members))
    await kip848._reconcile(members, topic, PARTITIONS)


async def _interval(member: kip848.Consumer) -> int:
    steady = ConsumerGroupHeartbeatRequest(
        group_id=member.group, member_id=member.member_id, member_epoch=member.epoch
    )
    r: ConsumerGroupHeartbeatResponse = await member.wire.call(steady)
    assert r.error_code == 0 and r.assignment is None, r
    return r.heartbeat_interval_ms


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    daemon = start_daemon(args=DAEMON_ARGS)
    try:
        t0 = time.monotonic()
        consumer_frames, interval_ms = await consumer_members(daemon.port, args.members, 500)
        formed_consumer = time.monotonic() - t0
        t0 = time.monotonic()
        classic = await scale._form(daemon.port, 0, args.members // GROUP_SIZE, GROUP_SIZE, 500)
        formed_classic = time.monotonic() - t0
        classic_frames = load.heartbeat_frames(classic, 4)
        print(
            f"formed {len(consumer_frames)} consumer members ({formed_consumer:.0f} s),"
            f" {len(classic_frames)} classic ({formed_classic:.0f} s);"
            f" consumer heartbeat interval {interval_ms} ms",
            flush=True,
        )
        populations = {
            "consumer": await _connections(
                daemon.port, consumer_frames, args.connections, 68, 1, interval_ms / 1000
            ),
            "classic": await _connections(
                daemon.port, classic_frames, args.connections, 12, 4, CLASSIC_INTERVAL_S
            ),
            "idle": [],
        }
        # Warm-up: every member heartbeats once first (the first heartbeats after formation
        # also meet its leftovers: the collector going through the formation's garbage).
        for name in ("consumer", "classic"):
            conns = populations[name]
            await _pace(conns, max(c.interval_s for c in conns))
        await asyncio.sleep(1.0)
        names = list(populations)
        rounds = []
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            sample: dict[str, Any] = {}
            for name in order:
                conns = populations[name]
                before = sum(c.answered for c in conns)
                pacing = asyncio.ensure_future(_pace(conns, args.seconds))
                await asyncio.sleep(1.0)  # the phase settles in
                cpu0, wall0, n0 = cpu_seconds(daemon.pid), time.monotonic(), _answered(conns)
                await pacing
                cpu, wall = cpu_seconds(daemon.pid) - cpu0, time.monotonic() - wall0
                await asyncio.sleep(0.3)  # answers still on their way
                answered = _answered(conns) - n0
                sample[name] = {
                    "cores": cpu / wall,
                    "heartbeats_per_s": answered / wall,
                    "cpu_us_per_heartbeat": cpu / answered * 1e6 if answered else 0.0,
                    "answered": _answered(conns) - before,
                    "errors": _errors(conns),
                    "loadavg": Path("/proc/loadavg").read_text().split()[0],
                }
            rounds.append(sample)
            print(f"round {r + 1}/{args.rounds}: {_line(sample)}", flush=True)
        return {
            "formation_s": {"consumer": formed_consumer, "classic": formed_classic},
            "consumer_heartbeat_interval_ms": interval_ms,
            "rounds": rounds,
        }
    finally:
        daemon.stop()


def _answered(conns: list[Heartbeats]) -> int:
    return sum(c.answered for c in conns)


def _errors(conns: list[Heartbeats]) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in conns:
        for code, n in c.errors.items():
            out[code] = out.get(code, 0) + n
    return out


def _line(sample: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v['cores']:.3f} cores {v['heartbeats_per_s']:,.0f}/s"
        f" {v['cpu_us_per_heartbeat']:.1f}µs errors {v['errors']}"
        for k, v in sample.items()
    )


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def med(name: str, key: str) -> float:
        return float(statistics.median(r[name][key] for r in rounds))

    def ratio(a: str, b: str, key: str, floor: bool = False) -> float:
        def value(r: dict[str, Any], name: str) -> float:
            v = float(r[name][key])
            return v - float(r["idle"][key]) if floor else v

        # CPU is read in 10 ms ticks: a short run may read none for the baseline.
        per_round = [value(r, a) / value(r, b) for r in rounds if value(r, b)]
        return float(statistics.median(per_round)) if per_round else float("nan")

    return {
        "medians": {
            name: {
                key: med(name, key) for key in ("cores", "heartbeats_per_s", "cpu_us_per_heartbeat")
            }
            for name in rounds[0]
        },
        "ratios": {
            "consumer/classic cores": ratio("consumer", "classic", "cores"),
            "consumer/classic cores above idle": ratio("consumer", "classic", "cores", True),
            "consumer/classic cpu per heartbeat": ratio(
                "consumer", "classic", "cpu_us_per_heartbeat"
            ),
        },
    }


def markdown(result: dict[str, Any]) -> str:
    s = result["summary"]
    lines = [
        "# 10,000 KIP-848 members at 5 s against 10,000 classic members at 3 s"
        " (`python -m bench.steady_members`)",
        "",
        f"{result['members']:,} members of each protocol in groups of {GROUP_SIZE} on one daemon"
        f" (memory store), {result['connections']} generator connections per population;"
        f" {result['rounds_n']} rounds of {result['seconds']} s phases, in rotating order;"
        f" consumer heartbeat interval {result['consumer_heartbeat_interval_ms']} ms (the"
        f" daemon's answer), classic {CLASSIC_INTERVAL_S:.0f} s; formation took"
        f" {result['formation_s']['consumer']:.0f} s (consumer) and"
        f" {result['formation_s']['classic']:.0f} s (classic); {result['machine']}; load"
        f" average before {result['loadavg']}, after {result['loadavg_after']}. Medians over"
        " rounds; ratios taken within each round.",
        "",
        "| phase | daemon CPU (cores) | heartbeats/s | CPU per heartbeat (µs) |",
        "|---|---|---|---|",
    ]
    for name, v in s["medians"].items():
        lines.append(
            f"| {name} | {v['cores']:.3f} | {v['heartbeats_per_s']:,.0f} |"
            f" {v['cpu_us_per_heartbeat']:.1f} |"
        )
    lines += ["", "| ratio (median of per-round ratios) | value |", "|---|---|"]
    for key, v in s["ratios"].items():
        lines.append(f"| {key} | {v:.2f} |")
    lines += ["", "Errors answered (per round, phase: code -> count):", ""]
    for i, r in enumerate(result["rounds"]):
        lines.append(f"- round {i + 1}: " + ", ".join(f"{k} {v['errors']}" for k, v in r.items()))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.members, args.seconds, args.rounds, args.connections = 200, 4.0, 1, 4
    loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    run = uvloop.run(_run(args))
    result = {
        "members": args.members,
        "connections": args.connections,
        "seconds": args.seconds,
        "rounds_n": args.rounds,
        "machine": f"{platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}",
        "loadavg": loadavg,
        "loadavg_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        **run,
        "summary": summarize(run["rounds"]),
    }
    text = markdown(result)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "steady_members.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "steady_members.md").write_text(text)
    print(text)
    return result


if __name__ == "__main__":
    main()
