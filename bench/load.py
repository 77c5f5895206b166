"""Heartbeat load generator processes: closed-loop (fixed pipeline depth) or paced (each
member every N seconds), over pre-encoded requests so the generator spends its time on the
socket, not on encoding.

Frames are encoded once with the project's codecs; each response is split with the
project's ``FrameSplitter`` and decoded with ``decode_response`` (every error code is
counted). Each worker is its own process with its own uvloop; it reports its request
count, latency samples (send to response, per connection responses arrive in order) and
its own CPU time over the measured window.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import deque
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import uvloop

from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.frames import FrameSplitter, decode_response, encode_request, encode_response

from .groups import Member

HEARTBEAT = BY_KEY[12]
MAX_SAMPLES = 200_000


@dataclass
class Job:
    """One worker's share: its connections, each with the members it heartbeats for."""

    port: int
    version: int
    members: list[list[Member]]  # one list per connection
    depth: int  # closed loop: requests kept outstanding per connection; 0 = paced
    interval_s: float  # paced: each member heartbeats this often
    start_at: float  # time.monotonic() (system wide) when measuring starts
    seconds: float
    warmup_s: float


@dataclass
class WorkerResult:
    requests: int = 0
    errors: dict[int, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    window_s: float = 0.0


def heartbeat_frames(members: list[Member], version: int) -> list[bytes]:
    return [
        encode_request(
            HeartbeatRequest(
                group_id=m.group, generation_id=m.generation_id, member_id=m.member_id
            ),
            version,
            i,
            "bench",
        )
        for i, m in enumerate(members)
    ]


def ok_body(version: int) -> tuple[int, bytes]:
    """Where a heartbeat response's body starts, and the bytes of an error-free body."""
    frame = encode_response(HEARTBEAT, version, 0, HeartbeatResponse())
    header = 4 if HEARTBEAT.response_header_version(version) == 0 else 5
    return header, frame[4 + header :]


class Pump(asyncio.Protocol):
    """One connection: sends heartbeat frames and times their responses.

    A response whose body is byte for byte the error-free one is counted without decoding
    it (only the correlation id differs between them); any other is decoded."""

    def __init__(self, frames: list[bytes], version: int, result: WorkerResult) -> None:
        self.frames = frames
        self.version = version
        self.body_at, self.ok = ok_body(version)
        self.result = result
        self.next = 0
        self.sent: deque[float] = deque()
        self.splitter = FrameSplitter()
        self.transport: asyncio.Transport | None = None
        self.closed_loop = False
        self.measure_from = float("inf")
        self.measure_to = float("inf")
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    def send(self, count: int) -> None:
        assert self.transport is not None
        frames = self.frames
        n = len(frames)
        batch = []
        for _ in range(count):
            batch.append(frames[self.next])
            self.next = (self.next + 1) % n
        now = time.monotonic()
        self.sent.extend([now] * count)
        self.transport.write(b"".join(batch))

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        got = 0
        result = self.result
        body_at, ok = self.body_at, self.ok
        for frame in self.splitter.feed(data):
            sent_at = self.sent.popleft()
            got += 1
            error = 0
            if frame[body_at:] != ok:
                _, body = decode_response(HEARTBEAT, self.version, frame)
                assert isinstance(body, HeartbeatResponse)
                error = body.error_code
            if self.measure_from <= sent_at and now < self.measure_to:
                result.requests += 1
                if error:
                    result.errors[error] = result.errors.get(error, 0) + 1
                if len(result.latencies_ms) < MAX_SAMPLES:
                    result.latencies_ms.append((now - sent_at) * 1000)
        if self.closed_loop and got and now < self.measure_to:
            self.send(got)


async def _run(job: Job) -> WorkerResult:
    loop = asyncio.get_running_loop()
    result = WorkerResult()
    pumps: list[Pump] = []
    for members in job.members:
        frames = heartbeat_frames(members, job.version)
        _, pump = await loop.create_connection(
            lambda frames=frames: Pump(frames, job.version, result),  # type: ignore[misc]
            "127.0.0.1",
            job.port,
        )
        pumps.append(pump)
    begin = job.start_at - job.warmup_s
    measure_from, measure_to = job.start_at, job.start_at + job.seconds
    await asyncio.sleep(max(0.0, begin - time.monotonic()))
    for pump in pumps:
        pump.measure_from, pump.measure_to = measure_from, measure_to
    if job.depth:
        for pump in pumps:
            pump.closed_loop = True
            pump.send(job.depth)
        await asyncio.sleep(max(0.0, measure_from - time.monotonic()))
        cpu0 = time.process_time()
        await asyncio.sleep(max(0.0, measure_to - time.monotonic()))
        cpu1 = time.process_time()
    else:
        cpu0 = await _paced(pumps, job, measure_from, measure_to)
        cpu1 = time.process_time()
    result.cpu_s = cpu1 - cpu0
    result.window_s = job.seconds
    # Let the last responses of the window arrive.
    deadline = time.monotonic() + 5
    while any(p.sent for p in pumps) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    for pump in pumps:
        if pump.transport is not None:
            pump.transport.close()
    return result


async def _paced(pumps: list[Pump], job: Job, measure_from: float, measure_to: float) -> float:
    """Each member once per interval, spread evenly over it: every millisecond each
    connection sends what it owes by then (so a late tick catches up instead of losing
    sends). Returns the process CPU time when the measured window began."""
    tick = 0.001
    rates = [len(p.frames) / job.interval_s for p in pumps]
    sent = [0] * len(pumps)
    begin = time.monotonic()
    cpu0: float | None = None
    now = begin
    while now < measure_to:
        if cpu0 is None and now >= measure_from:
            cpu0 = time.process_time()
        elapsed = now - begin
        for i, pump in enumerate(pumps):
            due = int(rates[i] * elapsed) - sent[i]
            if due > 0:
                sent[i] += due
                pump.send(due)
        await asyncio.sleep(tick)
        now = time.monotonic()
    return cpu0 if cpu0 is not None else time.process_time()


def warm_up(pool: Executor, workers: int = 2) -> None:
    """Starts the pool's worker processes and has each import this module, so that a job
    submitted later starts at once (a spawned worker's start-up took seconds under load)."""
    for future in [pool.submit(_ready) for _ in range(workers)]:
        future.result(timeout=120)


def _ready() -> None:
    time.sleep(0.2)  # held long enough that the next submission goes to another worker


def run_job(job: Job) -> dict[str, Any]:
    """Entry point of a worker process."""
    result = uvloop.run(_run(job))
    return {
        "requests": result.requests,
        "errors": result.errors,
        "latencies_ms": result.latencies_ms,
        "cpu_s": result.cpu_s,
        "window_s": result.window_s,
    }


def merge(results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Totals over workers: rate, p50/p99 latency, generator CPU (cores busy)."""
    lat = sorted(x for r in results for x in r["latencies_ms"])
    errors: dict[int, int] = {}
    for r in results:
        for code, n in r["errors"].items():
            errors[int(code)] = errors.get(int(code), 0) + n
    requests = sum(r["requests"] for r in results)
    return {
        "requests": requests,
        "rate_per_s": requests / seconds,
        "p50_ms": _pct(lat, 50),
        "p99_ms": _pct(lat, 99),
        "mean_ms": statistics.fmean(lat) if lat else 0.0,
        "errors": errors,
        "generator_cpu_cores": sum(r["cpu_s"] for r in results) / seconds,
    }


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]
