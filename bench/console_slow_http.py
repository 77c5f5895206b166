"""Does the Kafka listener keep answering while slow HTTP clients hold the console's port?

    python -m bench.console_slow_http [--quick] [--clients N] [--seconds S]

The daemon runs under a 1,024-descriptor limit (systemd's default ``LimitNOFILE``) with its
console on. From another process, 2,000 clients connect to the console and never finish
their headers (a byte a second; reconnecting when dropped). Meanwhile a probe opens a new
Kafka connection every 100 ms and sends ApiVersions. Two conditions, same machine, same run:

- ``limits``: the console's defaults (a connection cap, a descriptor reserve for Kafka,
  header and idle timeouts);
- ``no limits``: those limits set out of reach (as before issue 32).

Reports per condition the probes answered, their p99, the daemon's open descriptors at
most, and the "console connection limit hit" log lines. Writes
``bench/results/console_slow_http.json`` and ``.md``. Loopback (127.0.0.1) only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coordinator.client.connection import connect
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse

from .servers import free_port

RESULTS = Path(__file__).parent / "results"
DESCRIPTOR_LIMIT = 1024
NO_LIMITS = (
    "--http-max-connections",
    "100000",
    "--http-fd-reserve",
    "0",
    "--http-header-timeout-ms",
    "3600000",
    "--http-idle-timeout-ms",
    "3600000",
)
CONDITIONS = {"limits": (), "no limits": NO_LIMITS}


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))


def start(extra: tuple[str, ...], log: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    kafka, http = free_port(), free_port()
    cmd = [
        sys.executable,
        "-m",
        "coordinator.commands.cli",
        "serve",
        "--listen",
        f"127.0.0.1:{kafka}",
        "--store",
        "memory",
        "--http-listen",
        f"127.0.0.1:{http}",
        "--log-level",
        "WARNING",
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, preexec_fn=_limit_descriptors)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", http)):
            return proc, kafka, http
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the daemon did not start: {log.read_text()[-2000:]}")


def slow_http_clients(port: int, clients: int, seconds: float) -> None:
    """``clients`` connections that never finish their headers (run in its own process)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, clients + 512), hard))

    async def one(end: float) -> None:
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.5)
                continue
            with contextlib.suppress(OSError):
                writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while time.monotonic() < end and not reader.at_eof():
                    writer.write(b"X")  # a header that never ends
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(reader.read(1024), 1.0)
            writer.close()
            await asyncio.sleep(0.2)  # then back again

    async def main() -> None:
        end = time.monotonic() + seconds
        await asyncio.gather(*(one(end) for _ in range(clients)), return_exceptions=True)

    asyncio.run(main())


def open_descriptors(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def measure(
    extra: tuple[str, ...], clients: int, seconds: float, settle_s: float = 5.0
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "daemon.log"
        proc, kafka, http = start(extra, log)
        attack = multiprocessing.get_context("spawn").Process(
            target=slow_http_clients, args=(http, clients, seconds + settle_s)
        )
        try:
            attack.start()
            time.sleep(settle_s)  # the clients connect
            result = asyncio.run(probe(proc.pid, kafka, seconds))
        finally:
            attack.join(seconds + 30)
            if attack.is_alive():
                attack.kill()
            proc.terminate()
            proc.wait(10)
        result["limit_log_lines"] = log.read_text().count("console connection limit hit")
        return result


async def probe(pid: int, port: int, seconds: float) -> dict[str, float]:
    """ApiVersions on a new connection every 100 ms for ``seconds``."""
    answered, latencies, most_fds = 0, [], 0
    tries = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tries += 1
        most_fds = max(most_fds, open_descriptors(pid))
        sent = time.perf_counter()
        with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
            client = await asyncio.wait_for(connect("127.0.0.1", port), 2)
            try:
                resp = await asyncio.wait_for(
                    client.request(
                        ApiVersionsRequest(client_software_name="p", client_software_version="1"),
                        3,
                        ApiVersionsResponse,
                    ),
                    2,
                )
                if resp.error_code == 0:
                    answered += 1
                    latencies.append(time.perf_counter() - sent)
            finally:
                client.close()
        await asyncio.sleep(0.1)
    latencies.sort()
    p99 = 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0
    return {
        "probes": tries,
        "answered": answered,
        "p99_ms": p99,
        "most_open_descriptors": most_fds,
    }


def write_report(results: dict[str, dict[str, float]], clients: int, seconds: float) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "console_slow_http.json").write_text(
        json.dumps(
            {
                "machine": platform.platform(),
                "clients": clients,
                "seconds": seconds,
                "descriptor_limit": DESCRIPTOR_LIMIT,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    lines = [
        "# Kafka ApiVersions while slow HTTP clients hold the console's port",
        "",
        f"{clients} clients never finish their headers on the console's port (from another",
        f"process) while a probe opens a Kafka connection every 100 ms for {seconds:g} s and",
        f"sends ApiVersions; the daemon runs under a {DESCRIPTOR_LIMIT}-descriptor limit.",
        "",
        "| condition | ApiVersions answered | p99 ms | daemon's descriptors at most |"
        " limit log lines |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {c} | {r['answered']}/{r['probes']} | {r['p99_ms']:.1f} |"
            f" {r['most_open_descriptors']} | {r['limit_log_lines']} |"
            for c, r in results.items()
        ),
        "",
        "`limits`: the console's defaults; `no limits`: `"
        + " ".join(NO_LIMITS)
        + "` (as before issue 32).",
    ]
    (RESULTS / "console_slow_http.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run, nothing written")
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds = 100, 1.0
    settle_s = 1.0 if args.quick else 5.0
    results = {
        c: measure(extra, args.clients, args.seconds, settle_s) for c, extra in CONDITIONS.items()
    }
    if not args.quick:
        write_report(results, args.clients, args.seconds)
    for condition, r in results.items():
        print(f"{condition:>9}: {r['answered']}/{r['probes']} answered, p99 {r['p99_ms']:.1f} ms")
    return results


if __name__ == "__main__":
    main()
