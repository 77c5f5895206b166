"""Steady-state heartbeats: what a heartbeat that changes nothing costs the daemon, on the
classic protocol and on KIP-848's, and how the classic one compares with the machine's
ceiling.

    python -m bench.steady [--runs 7] [--requests 100000] [--quick] [--no-write]
        [--placement free|same|split] [--colocation]

One daemon (memory store) holds one Stable classic member (Heartbeat v4) and one
reconciled consumer-protocol member (ConsumerGroupHeartbeat v1 with its group, member id
and epoch only, as clients send it once reconciled). The generator (this process, uvloop)
keeps ``depth`` requests in flight on one socket, the same frame again and again, and
counts answers by their size prefix. Each run measures, in an order that rotates from run
to run, and in five slices per target, the targets taking turns:

* ``classic`` (the compiled heartbeat lane, ``coordinator/fastlane``, when built) and
  ``classic-pure`` (a second daemon with ``COORDINATOR_PURE_PYTHON=1``: the pure-Python
  heartbeat lane alone), ``consumer`` (the compiled lane too, when built),
  ``consumer-pure`` (the pure daemon: the pure-Python consumer heartbeat lane) and
  ``consumer-general`` (the same consumer heartbeat with its unchanged rebalance timeout,
  which the lanes leave to the general path: what a steady heartbeat cost before them) at
  depth 64 and 1: the daemon's CPU time (``/proc``) over the requests, per request, and
  the rate;
* ``ceiling-c`` (``bench/ceiling_c.py``, compiled here with ``cc``: no Python at all) and
  ``ceiling-py`` (``bench/ceiling.py``, uvloop answering canned bytes), answering Heartbeat
  v4 at depth 64 and 1: the rate.

With ``--colocation`` a thread samples every 2 ms whether the measured server last ran on
the generator's CPU (``servers.Colocation``): the share of samples is reported per target.

Every answer of the daemon is checked once per round to be error-free. Medians over runs;
the ratios are computed within each run and their median shown. Writes
``bench/results/steady.json`` and ``steady.md`` (``steady_same.*``, ``steady_split.*``
with ``--placement same`` or ``split``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import uvloop

from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.fastlane.batch import PURE_PYTHON_ENV, compiled
from coordinator.shared.catalog import topic_id_for
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.frames import decode_response, encode_request, encode_response

from .ceiling_c import CompiledCeiling
from .servers import (
    DAEMON_ARGS,
    PLACEMENTS,
    Colocation,
    ServerProcess,
    cpu_split,
    free_port,
    place,
    start_ceiling,
    start_daemon,
)

RESULTS = Path(__file__).parent / "results"
CLIENT_ID = "steady-bench"
DEPTHS = (64, 1)
#: Turns the targets take within one run (see ``_run``).
SLICES = 5


class Pipe(asyncio.Protocol):
    """Keeps ``depth`` copies of one request frame in flight until ``total`` are answered."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.frame = b""
        self.left = 0
        self.done: asyncio.Future[bytes] | None = None
        self.last = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def run(self, frame: bytes, depth: int, total: int) -> asyncio.Future[bytes]:
        assert self.transport is not None
        self.frame, self.left = frame, total
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(frame * min(depth, total))
        self._in_flight = min(depth, total)
        self._unsent = total - self._in_flight
        return self.done

    def data_received(self, data: bytes) -> None:
        buf = self.buffer + data if self.buffer else data
        at, got, size_of = 0, 0, len(buf)
        last = at
        while size_of - at >= 4:
            size = int.from_bytes(buf[at : at + 4], "big")
            if size_of - at - 4 < size:
                break
            last = at
            at += 4 + size
            got += 1
        self.buffer = buf[at:]
        if not got:
            return
        self.left -= got
        if self.left <= 0:
            assert self.done is not None
            self.done.set_result(buf[last:at])
            return
        more = min(got, self._unsent)
        if more:
            self._unsent -= more
            assert self.transport is not None
            self.transport.write(self.frame * more)


async def _pipe(port: int) -> Pipe:
    _, pipe = await asyncio.get_running_loop().create_connection(Pipe, "127.0.0.1", port)
    return pipe


async def stable_classic_member(
    c: KafkaConnectionClient, group_id: str, session_timeout_ms: int = 30_000
) -> tuple[str, int]:
    """A member alone in classic group ``group_id``, joined and synced over ``c`` (its
    session and rebalance timeouts ``session_timeout_ms``): its member id and generation.
    The wire tests make their members with it too."""

    def join(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=session_timeout_ms,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )

    first = await c.request(join(""), 5, JoinGroupResponse)
    joined = await c.request(join(first.member_id), 5, JoinGroupResponse)
    assert joined.error_code == 0, joined
    sync = SyncGroupRequest(
        group_id=group_id, generation_id=joined.generation_id, member_id=first.member_id
    )
    assert (await c.request(sync, 3, SyncGroupResponse)).error_code == 0
    return first.member_id, joined.generation_id


async def classic_member(port: int) -> bytes:
    """A Stable classic member's Heartbeat v4 frame."""
    c = await connect("127.0.0.1", port, client_id=CLIENT_ID)
    member_id, generation = await stable_classic_member(c, "steady-classic")
    c.close()
    body = HeartbeatRequest(
        group_id="steady-classic", generation_id=generation, member_id=member_id
    )
    return encode_request(body, 4, 1, CLIENT_ID)


async def consumer_member(port: int) -> tuple[bytes, bytes]:
    """A reconciled consumer-protocol member's steady ConsumerGroupHeartbeat v1 frame, and
    one the general path answers."""
    c = await connect("127.0.0.1", port, client_id=CLIENT_ID)
    member = "steady-member-0000000001"
    body = ConsumerGroupHeartbeatRequest(
        group_id="steady-consumer",
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["bench"],
        topic_partitions=[],
    )
    owned: list[int] = []
    for _ in range(50):
        r = await c.request(body, 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == 0, r
        if r.assignment is not None:
            owned = sorted(p for t in r.assignment.topic_partitions for p in t.partitions)
        if owned and r.assignment is None:
            break
        body = ConsumerGroupHeartbeatRequest(
            group_id="steady-consumer",
            member_id=member,
            member_epoch=r.member_epoch,
            topic_partitions=[
                ConsumerGroupHeartbeatRequestTopicPartitions(
                    topic_id=topic_id_for("bench"), partitions=owned
                )
            ],
        )
        await asyncio.sleep(0.1)
    c.close()
    steady = ConsumerGroupHeartbeatRequest(
        group_id="steady-consumer", member_id=member, member_epoch=r.member_epoch
    )
    # The same heartbeat with its (unchanged) rebalance timeout: the lane leaves it to the
    # general path, which answers it alike and writes nothing (what every steady heartbeat
    # cost before the lane).
    general = ConsumerGroupHeartbeatRequest(
        group_id="steady-consumer",
        member_id=member,
        member_epoch=r.member_epoch,
        rebalance_timeout_ms=30_000,
    )
    return encode_request(steady, 1, 1, CLIENT_ID), encode_request(general, 1, 1, CLIENT_ID)


async def _keep_alive(port: int, frames: list[bytes]) -> None:
    """Each member heartbeats once a second between (and during) measurements, so that
    a loaded machine's long run does not let a session expire."""
    pipes = [await _pipe(port) for _ in frames]
    while True:
        for pipe, frame in zip(pipes, frames, strict=True):
            await pipe.run(frame, 1, 1)
        await asyncio.sleep(1.0)


def _error_free(frame: bytes, answer: bytes) -> None:
    key, version = int.from_bytes(frame[4:6], "big"), int.from_bytes(frame[6:8], "big")
    _, body = decode_response(BY_KEY[key], version, answer[4:])
    assert isinstance(body, HeartbeatResponse | ConsumerGroupHeartbeatResponse)
    if body.error_code:
        raise RuntimeError(f"{BY_KEY[key].name} answered error {body.error_code}")


async def _measure(
    pid: int, port: int, frame: bytes, depth: int, total: int, colocation: Colocation | None = None
) -> dict[str, float]:
    pipe = await _pipe(port)
    await pipe.run(frame, depth, min(total, 2_000))  # warm: memo, caches
    if colocation is not None:
        colocation.watch(pid)
    (user0, sys0), wall0 = cpu_split(pid), time.perf_counter()
    last = await pipe.run(frame, depth, total)
    wall, (user1, sys1) = time.perf_counter() - wall0, cpu_split(pid)
    shared: dict[str, float] = {}
    if colocation is not None:
        shared = {"same_cpu": colocation.same, "cpu_samples": colocation.samples}
        colocation.watch(None)
    assert pipe.transport is not None
    pipe.transport.close()
    _error_free(frame, last)
    return {
        "rate_per_s": total / wall,
        "cpu_us_per_request": (user1 - user0 + sys1 - sys0) / total * 1e6,
        "user_us_per_request": (user1 - user0) / total * 1e6,
        **shared,
    }


def _heartbeat_answer() -> bytes:
    from protocol.apis.heartbeat import HeartbeatResponse as Answer

    return encode_response(BY_KEY[12], 4, 0, Answer())


async def _run(
    runs: int, total: int, placement: str, colocation: Colocation | None = None
) -> tuple[list[dict[str, Any]], str]:
    daemon = start_daemon(args=DAEMON_ARGS)
    pure = start_daemon(name="daemon-pure", args=DAEMON_ARGS, env={PURE_PYTHON_ENV: "1"})
    py_ceiling: ServerProcess = start_ceiling()
    c_ceiling = CompiledCeiling(free_port(), _heartbeat_answer())
    await asyncio.sleep(0.3)
    placed = place(placement, (daemon.pid, pure.pid, py_ceiling.pid, c_ceiling.pid))
    keepalive: list[asyncio.Future[None]] = []
    try:
        classic = await classic_member(daemon.port)
        classic_pure = await classic_member(pure.port)
        consumer, consumer_general = await consumer_member(daemon.port)
        consumer_pure, _ = await consumer_member(pure.port)
        targets = {
            "classic": (daemon.pid, daemon.port, classic),
            "classic-pure": (pure.pid, pure.port, classic_pure),
            "consumer": (daemon.pid, daemon.port, consumer),
            "consumer-pure": (pure.pid, pure.port, consumer_pure),
            "consumer-general": (daemon.pid, daemon.port, consumer_general),
            "ceiling-c": (c_ceiling.pid, c_ceiling.port, classic),
            "ceiling-py": (py_ceiling.pid, py_ceiling.port, classic),
        }
        keepalive = [
            asyncio.ensure_future(_keep_alive(daemon.port, [classic, consumer])),
            asyncio.ensure_future(_keep_alive(pure.port, [classic_pure, consumer_pure])),
        ]
        names = list(targets)
        out = []
        for run in range(runs):
            order = names[run % len(names) :] + names[: run % len(names)]
            sample: dict[str, Any] = {}
            for depth in DEPTHS:
                n = total if depth > 1 else max(total // 10, 1_000)
                # Each target's requests in SLICES slices, the targets taking turns: a
                # shared machine's load changes within seconds, and a ratio is only as
                # good as the two rates' sharing of it.
                spent = {name: [0.0] * 5 for name in order}
                for _ in range(SLICES):
                    for name in order:
                        pid, port, frame = targets[name]
                        m = await _measure(pid, port, frame, depth, n // SLICES, colocation)
                        spent[name][0] += (n // SLICES) / m["rate_per_s"]
                        spent[name][1] += m["cpu_us_per_request"] * (n // SLICES) / 1e6
                        spent[name][2] += m["user_us_per_request"] * (n // SLICES) / 1e6
                        spent[name][3] += m.get("same_cpu", 0)
                        spent[name][4] += m.get("cpu_samples", 0)
                for name, (wall, cpu, user, same, samples) in spent.items():
                    done = n // SLICES * SLICES
                    sample[f"{name}@{depth}"] = {
                        "rate_per_s": done / wall,
                        "cpu_us_per_request": cpu / done * 1e6,
                        "user_us_per_request": user / done * 1e6,
                    }
                    if colocation is not None:
                        sample[f"{name}@{depth}"]["same_cpu_share"] = (
                            same / samples if samples else float("nan")
                        )
            out.append(sample)
            print(f"run {run + 1}/{runs}: " + _line(sample), flush=True)
        return out, placed
    finally:
        for task in keepalive:
            task.cancel()
        daemon.stop()
        pure.stop()
        py_ceiling.stop()
        c_ceiling.stop()


def _line(sample: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v['rate_per_s']:,.0f}/s {v['cpu_us_per_request']:.1f}µs" for k, v in sample.items()
    )


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str, field: str) -> float:
        return float(statistics.median(s[key][field] for s in samples))

    def ratio(a: str, b: str, field: str) -> float:
        # CPU time is read in 10 ms ticks: a short run of a cheap target may read none.
        values = [s[a][field] / s[b][field] for s in samples if s[b][field]]
        return float(statistics.median(values)) if values else float("nan")

    out: dict[str, Any] = {"medians": {}, "ratios": {}}
    for key in samples[0]:
        out["medians"][key] = {
            "rate_per_s": med(key, "rate_per_s"),
            "cpu_us_per_request": med(key, "cpu_us_per_request"),
            "user_us_per_request": med(key, "user_us_per_request"),
        }
        if "same_cpu_share" in samples[0][key]:
            out["medians"][key]["same_cpu_share"] = med(key, "same_cpu_share")
    for depth in DEPTHS:
        out["ratios"][f"consumer/classic cpu per request @{depth}"] = ratio(
            f"consumer@{depth}", f"classic@{depth}", "cpu_us_per_request"
        )
        out["ratios"][f"consumer-pure/classic cpu per request @{depth}"] = ratio(
            f"consumer-pure@{depth}", f"classic@{depth}", "cpu_us_per_request"
        )
        out["ratios"][f"consumer/consumer-pure cpu per request @{depth}"] = ratio(
            f"consumer@{depth}", f"consumer-pure@{depth}", "cpu_us_per_request"
        )
        out["ratios"][f"consumer-general/classic cpu per request @{depth}"] = ratio(
            f"consumer-general@{depth}", f"classic@{depth}", "cpu_us_per_request"
        )
        out["ratios"][f"classic/ceiling-c rate @{depth}"] = ratio(
            f"classic@{depth}", f"ceiling-c@{depth}", "rate_per_s"
        )
        out["ratios"][f"classic/ceiling-py rate @{depth}"] = ratio(
            f"classic@{depth}", f"ceiling-py@{depth}", "rate_per_s"
        )
        out["ratios"][f"classic-pure/ceiling-c rate @{depth}"] = ratio(
            f"classic-pure@{depth}", f"ceiling-c@{depth}", "rate_per_s"
        )
        out["ratios"][f"classic-pure/ceiling-py rate @{depth}"] = ratio(
            f"classic-pure@{depth}", f"ceiling-py@{depth}", "rate_per_s"
        )
        out["ratios"][f"classic/classic-pure cpu per request @{depth}"] = ratio(
            f"classic@{depth}", f"classic-pure@{depth}", "cpu_us_per_request"
        )
        out["ratios"][f"ceiling-py/ceiling-c rate @{depth}"] = ratio(
            f"ceiling-py@{depth}", f"ceiling-c@{depth}", "rate_per_s"
        )
    return out


def _markdown(result: dict[str, Any]) -> str:
    s = result["summary"]
    lines = [
        "# Steady-state heartbeats (`python -m bench.steady`)",
        "",
        f"{result['runs']} runs of {result['requests']:,} requests at depth 64 (a tenth at"
        f" depth 1), targets interleaved; {result['machine']}; load average before:"
        f" {result['loadavg']}; load average after: {result.get('loadavg_after', '?')}."
        f" Compiled heartbeat lane: {result.get('compiled', '?')}."
        f" Placement: {result.get('placement', 'free')}."
        " Medians over runs; ratios taken within each run.",
        "",
        "`classic`: Heartbeat v4 of a Stable member, the daemon as installed (its compiled"
        " heartbeat lane, `coordinator/fastlane`, when built); `classic-pure`: a second daemon"
        " with `COORDINATOR_PURE_PYTHON=1` (the pure-Python lane); `consumer`: a reconciled"
        " member's steady ConsumerGroupHeartbeat v1 (ids and epoch only), the daemon as"
        " installed (the compiled lane answers it too); `consumer-pure`: the same on the pure"
        " daemon (the pure-Python consumer lane); `consumer-general`: the same heartbeat with"
        " its unchanged rebalance timeout (the general path); `ceiling-c`: a C epoll"
        " server answering canned bytes; `ceiling-py`: a uvloop server answering canned bytes."
        " Server CPU from /proc (10 ms ticks: coarse below 1 µs), and of it the time in user"
        " space (the rest is the kernel's: the socket calls and the wake-ups).",
        "",
    ]
    shared = any("same_cpu_share" in v for v in s["medians"].values())
    if shared:
        lines += [
            "Last column (`--colocation`): the share of 2 ms samples in which the server last"
            " ran on the generator's CPU, while the target was measured.",
            "",
        ]
    lines += [
        "| target @ depth | requests/s | server CPU per request (µs) | of it in user space |"
        + (" on the generator's CPU |" if shared else ""),
        "|---|---|---|---|" + ("---|" if shared else ""),
    ]
    for key, v in s["medians"].items():
        lines.append(
            f"| {key} | {v['rate_per_s']:,.0f} | {v['cpu_us_per_request']:.2f}"
            f" | {v.get('user_us_per_request', float('nan')):.2f} |"
            + (f" {v.get('same_cpu_share', float('nan')):.0%} |" if shared else "")
        )
    lines += ["", "| ratio (median of per-run ratios) | value |", "|---|---|"]
    for key, v in s["ratios"].items():
        lines.append(f"| {key} | {v:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="free",
        help="where the generator and the servers run (bench/servers.py: place)",
    )
    parser.add_argument(
        "--colocation",
        action="store_true",
        help="sample how often each server shares the generator's CPU (servers.Colocation)",
    )
    args = parser.parse_args(argv)
    runs, total = (1, 5_000) if args.quick else (args.runs, args.requests)
    loadavg = Path("/proc/loadavg").read_text().split()[:3]
    colocation = Colocation() if args.colocation else None
    try:
        samples, placed = uvloop.run(_run(runs, total, args.placement, colocation))
    finally:
        if colocation is not None:
            colocation.stop()
    result = {
        "placement": placed,
        "runs": runs,
        "requests": total,
        "machine": f"{platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}",
        "loadavg": " ".join(loadavg),
        "loadavg_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "compiled": "built" if compiled() else "not built (classic is the pure lane too)",
        "samples": samples,
        "summary": summarize(samples),
    }
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        # Each placement keeps its own results: steady.json (free), steady_same.json, ...
        name = "steady" if args.placement == "free" else f"steady_{args.placement}"
        (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / f"{name}.md").write_text(_markdown(result))
    print(_markdown(result))
    return result


if __name__ == "__main__":
    main()
