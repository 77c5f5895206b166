"""The requests clients send most besides heartbeats: what an auto-commit's OffsetCommit
and a Metadata refresh cost the daemon, against a classic Heartbeat in the same run.

    python -m bench.commit_metadata [--runs 5] [--requests 40000] [--quick] [--no-write]
        [--src OLDER_TREE --name commit_metadata_before] [--profile TARGET]

Two daemons: one on the memory store (what the request path costs: decode, admission,
the state machine, the driver, the answer) and one on SQLite (what a commit costs once it
is stored for real: its transaction and fsync, in the writer thread, counted too: CPU is
read for all the daemon's threads). Each holds ten topics of ten partitions, one Stable
classic member and one reconciled consumer-protocol (KIP-848) member in their own groups.
The generator (this process, uvloop) keeps ``depth`` requests in flight on one socket
and counts answers by their size prefix. Targets, in an order that rotates from run to
run:

* ``heartbeat``: the classic member's Heartbeat v4 (the baseline; the heartbeat lane);
* ``commit-classic``: OffsetCommit v8 of the classic member (generation and member id),
  four partitions, every request's offsets a step past the last (an auto-commit: Java's
  consumer commits every assigned partition's position every 5 s); taken by the commit
  lane (``handlers/offset_commit_lane.py``);
* ``commit-consumer``: OffsetCommit v9 of the KIP-848 member (member id and epoch), the
  same four partitions;
* ``commit-classic-sqlite``, ``commit-consumer-sqlite``: the same against SQLite, at depth
  1 too (each commit waits for its fsync; one connection: nothing to group-commit with);
* ``metadata-few``: Metadata v12 of three topics by name, no auto-creation (a consumer's
  refresh of its subscription);
* ``metadata-all``: Metadata v12 of all topics (null), as admin tools and regex
  subscriptions ask.

Server CPU time from ``/proc`` over the requests, per request, and the rate. Every target's
last answer is checked to be error-free. Medians over runs; the ratios to ``heartbeat`` are
computed within each run and their median shown. Writes
``bench/results/commit_metadata.json`` and ``commit_metadata.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.frames import decode_request, decode_response, encode_request

from .profile import aggregate
from .servers import cpu_seconds, start_daemon
from .steady import CLIENT_ID, Pipe, _keep_alive, classic_member, consumer_member

RESULTS = Path(__file__).parent / "results"
TOPICS = [f"topic-{i}" for i in range(9)]
DAEMON_ARGS = [
    "--topic",
    "bench:10",
    *[a for t in TOPICS for a in ("--topic", f"{t}:10")],
    "--group-initial-rebalance-delay-ms",
    "0",
    "--max-connections-per-ip",
    "20000",
    "--log-level",
    "WARNING",
]
#: The partitions an auto-commit names (of topic ``bench``, all owned by each member).
COMMITTED = (0, 1, 2, 3)
#: A placeholder offset found and replaced in the encoded template (a unique 8 bytes).
_MARK = 0x5A5A_5A5A_5A5A_0000


class Frames(Pipe):
    """``Pipe`` with a different frame per request: ``frames`` in turn."""

    def run_frames(self, frames: list[bytes], depth: int, total: int) -> asyncio.Future[bytes]:
        assert self.transport is not None
        self._frames, self._next = frames, 0
        self.left = total
        self.done = asyncio.get_running_loop().create_future()
        first = min(depth, total)
        self._unsent = total - first
        self.transport.write(self._take(first))
        return self.done

    def _take(self, n: int) -> bytes:
        frames, at = self._frames, self._next
        self._next = (at + n) % len(frames)
        if at + n <= len(frames):
            return b"".join(frames[at : at + n])
        return b"".join(frames[(at + i) % len(frames)] for i in range(n))

    def data_received(self, data: bytes) -> None:
        buf = self.buffer + data if self.buffer else data
        at, got, size_of, last = 0, 0, len(buf), 0
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
            self.transport.write(self._take(more))


def commit_frames(body: OffsetCommitRequest, version: int, count: int) -> list[bytes]:
    """``count`` frames of ``body``, the offsets of request i all ``i`` (moving on)."""
    for t in body.topics:
        for p in t.partitions:
            p.committed_offset = _MARK
    template = encode_request(body, version, 7, CLIENT_ID)
    mark = _MARK.to_bytes(8, "big")
    head, *rest = template.split(mark)
    assert len(rest) == len(COMMITTED)
    return [
        head + b"".join((i + 1).to_bytes(8, "big") + part for part in rest) for i in range(count)
    ]


def _commit(group_id: str, generation: int, member_id: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[
            OffsetCommitRequestTopic(
                name="bench",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=0, committed_metadata=""
                    )
                    for p in COMMITTED
                ],
            )
        ],
    )


async def members(port: int, count: int) -> dict[str, list[bytes]]:
    """Form a classic and a consumer member on the daemon at ``port``: their heartbeats and
    their commit frames."""
    classic = await classic_member(port)
    consumer, _general = await consumer_member(port)
    hb = decode_request(classic[4:]).body
    cgh = decode_request(consumer[4:]).body
    assert isinstance(hb, HeartbeatRequest) and isinstance(cgh, ConsumerGroupHeartbeatRequest)
    return {
        "heartbeat": [classic],
        "consumer-heartbeat": [consumer],
        "commit-classic": commit_frames(
            _commit(hb.group_id, hb.generation_id, hb.member_id), 8, count
        ),
        "commit-consumer": commit_frames(
            _commit(cgh.group_id, cgh.member_epoch, cgh.member_id), 9, count
        ),
    }


def metadata_frames() -> dict[str, list[bytes]]:
    few = MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in ("bench", TOPICS[0], TOPICS[1])],
        allow_auto_topic_creation=False,
    )
    every = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    return {
        "metadata-few": [encode_request(few, 12, 7, CLIENT_ID)],
        "metadata-all": [encode_request(every, 12, 7, CLIENT_ID)],
    }


def _error_free(frame: bytes, answer: bytes) -> None:
    key, version = int.from_bytes(frame[4:6], "big"), int.from_bytes(frame[6:8], "big")
    _, body = decode_response(BY_KEY[key], version, answer[4:])
    codes: list[int] = []
    if isinstance(body, OffsetCommitResponse):
        codes = [p.error_code for t in body.topics for p in t.partitions]
    elif isinstance(body, MetadataResponse):
        codes = [t.error_code for t in body.topics]
        if len(body.topics) < 3:
            raise RuntimeError(f"Metadata answered {len(body.topics)} topics")
    else:
        codes = [getattr(body, "error_code", 0)]
    if any(codes):
        raise RuntimeError(f"{BY_KEY[key].name} answered errors {codes}")


async def _measure(pid: int, port: int, frames: list[bytes], depth: int, total: int) -> Any:
    _, pipe = await asyncio.get_running_loop().create_connection(Frames, "127.0.0.1", port)
    await pipe.run_frames(frames, depth, min(total, 1_000))  # warm
    cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
    last = await pipe.run_frames(frames, depth, total)
    wall, cpu = time.perf_counter() - wall0, cpu_seconds(pid) - cpu0
    assert pipe.transport is not None
    pipe.transport.close()
    _error_free(frames[0], last)
    return {"rate_per_s": total / wall, "cpu_us_per_request": cpu / total * 1e6}


async def _run(runs: int, total: int, sqlite_total: int, src: Path | None) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as data:
        memory = start_daemon(src, args=["--store", "memory", *DAEMON_ARGS])
        sqlite = start_daemon(
            src,
            name="daemon-sqlite",
            args=["--store", "sqlite", "--data-dir", data, *DAEMON_ARGS],
        )
        keepalive: list[asyncio.Future[None]] = []
        try:
            await asyncio.sleep(0.3)
            on_memory = await members(memory.port, total)
            on_sqlite = await members(sqlite.port, total)
            for daemon, frames in ((memory, on_memory), (sqlite, on_sqlite)):
                beats = [frames["heartbeat"][0], frames["consumer-heartbeat"][0]]
                keepalive.append(asyncio.ensure_future(_keep_alive(daemon.port, beats)))
            # name -> (daemon, frames, depths, requests)
            targets: dict[str, tuple[Any, list[bytes], tuple[int, ...], int]] = {
                "heartbeat": (memory, on_memory["heartbeat"], (64, 1), total),
                "commit-classic": (memory, on_memory["commit-classic"], (64, 1), total),
                "commit-consumer": (memory, on_memory["commit-consumer"], (64, 1), total),
                "commit-classic-sqlite": (sqlite, on_sqlite["commit-classic"], (64,), sqlite_total),
                "commit-consumer-sqlite": (
                    sqlite,
                    on_sqlite["commit-consumer"],
                    (64,),
                    sqlite_total,
                ),
                **{
                    name: (memory, frames, (64, 1), total)
                    for name, frames in metadata_frames().items()
                },
            }
            names = list(targets)
            out = []
            for run in range(runs):
                order = names[run % len(names) :] + names[: run % len(names)]
                sample: dict[str, Any] = {}
                for depth in (64, 1):
                    for name in order:
                        daemon, sent, depths, n = targets[name]
                        if depth not in depths:
                            continue
                        n = n if depth > 1 else max(n // 5, 500)
                        sample[f"{name}@{depth}"] = await _measure(
                            daemon.pid, daemon.port, sent, depth, n
                        )
                out.append(sample)
                print(f"run {run + 1}/{runs}: " + _line(sample), flush=True)
            return out
        finally:
            for task in keepalive:
                task.cancel()
            memory.stop()
            sqlite.stop()


async def _profile(target: str, seconds: float, src: Path | None) -> str:
    """py-spy on a memory-store daemon while ``target`` is driven at depth 64: where its
    time goes (``bench.profile.aggregate``)."""
    spy_bin = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    with (
        tempfile.TemporaryDirectory() as tmp,
        start_daemon(src, args=["--store", "memory", *DAEMON_ARGS]) as daemon,
    ):
        driven = {**await members(daemon.port, 20_000), **metadata_frames()}[target]
        raw = Path(tmp) / "stacks.txt"
        command = [spy_bin, "record", "--pid", str(daemon.pid), "--rate", "200"]
        spy = subprocess.Popen(
            [*command, "--format", "raw", "--duration", str(int(seconds)), "--output", str(raw)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)  # py-spy attaches
        while spy.poll() is None:
            await _measure(daemon.pid, daemon.port, driven, 64, 3_000)
        return aggregate(raw, 30)


def _line(sample: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v['rate_per_s']:,.0f}/s {v['cpu_us_per_request']:.1f}µs" for k, v in sample.items()
    )


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str, field: str) -> float:
        return float(statistics.median(s[key][field] for s in samples))

    out: dict[str, Any] = {"medians": {}, "ratios": {}}
    for key in samples[0]:
        out["medians"][key] = {
            "rate_per_s": med(key, "rate_per_s"),
            "cpu_us_per_request": med(key, "cpu_us_per_request"),
        }
    for key in samples[0]:
        name, _, depth = key.partition("@")
        base = f"heartbeat@{depth}"
        if name == "heartbeat" or base not in samples[0]:
            continue
        # CPU is read in 10 ms ticks: a short run may read none for the baseline.
        per_run = [
            s[key]["cpu_us_per_request"] / s[base]["cpu_us_per_request"]
            for s in samples
            if s[base]["cpu_us_per_request"]
        ]
        out["ratios"][f"{key} / {base} cpu per request"] = (
            float(statistics.median(per_run)) if per_run else float("nan")
        )
    return out


def markdown(result: dict[str, Any], title: str) -> str:
    s = result["summary"]
    lines = [
        f"# {title}",
        "",
        f"{result['runs']} runs of {result['requests']:,} requests at depth 64 (a fifth at"
        f" depth 1; SQLite targets {result['sqlite_requests']:,}), targets interleaved;"
        f" {result['machine']}; load average before: {result['loadavg']}, after:"
        f" {result.get('loadavg_after', '?')}; daemon from {result['daemon_source']}."
        " Medians over runs; ratios taken within each run.",
        "",
        "| target @ depth | requests/s | server CPU per request (µs) |",
        "|---|---|---|",
    ]
    for key, v in s["medians"].items():
        lines.append(f"| {key} | {v['rate_per_s']:,.0f} | {v['cpu_us_per_request']:.2f} |")
    lines += ["", "| ratio (median of per-run ratios) | value |", "|---|---|"]
    for key, v in s["ratios"].items():
        lines.append(f"| {key} | {v:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40_000)
    parser.add_argument("--sqlite-requests", type=int, default=4_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--name", default="commit_metadata", help="results file name")
    parser.add_argument(
        "--src", type=Path, help="run the daemons from this source tree (an older commit's)"
    )
    parser.add_argument("--profile", metavar="TARGET", help="py-spy the daemon under TARGET")
    args = parser.parse_args(argv)
    if args.profile:
        text = uvloop.run(_profile(args.profile, 8.0, args.src))
        print(text)
        return {"profile": text}
    runs, total, sqlite_total = (
        (1, 3_000, 500) if args.quick else (args.runs, args.requests, args.sqlite_requests)
    )
    loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    samples = uvloop.run(_run(runs, total, sqlite_total, args.src))
    result = {
        "runs": runs,
        "requests": total,
        "sqlite_requests": sqlite_total,
        "machine": f"{platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}",
        "loadavg": loadavg,
        "loadavg_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "daemon_source": str(args.src or "this checkout"),
        "samples": samples,
        "summary": summarize(samples),
    }
    text = markdown(result, f"OffsetCommit and Metadata against Heartbeat (`{args.name}`)")
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / f"{args.name}.md").write_text(text)
    print(text)
    return result


if __name__ == "__main__":
    main()
