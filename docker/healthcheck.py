"""The container's healthcheck: the daemon answers on the first listener it is configured
with. A PLAINTEXT listener must answer a Kafka ApiVersions request; a TLS or SASL one (which
would need credentials) must accept a connection.

The listener is the one the running daemon was given, wherever it was given: its command
line, its environment (``GROUP_COORDINATOR_*``) or its ``--config`` file. They are read from
the daemon's process (``/proc/PID/cmdline``, ``environ`` and ``cwd``; PID 1 in the
container, or the first ``group-coordinator serve`` process, or ``--pid PID``) and resolved
by the daemon's own option parser, so the two cannot disagree.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from coordinator.client.connection import connect
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse

WILDCARDS = ("", "0.0.0.0", "::")


def serve_arguments(pid: int) -> list[str] | None:
    """The arguments after ``serve`` if the process is the daemon, else None."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except (OSError, UnicodeDecodeError):
        return None
    daemon = any(a.endswith("group-coordinator") or a == "coordinator.commands.cli" for a in argv)
    if not daemon or "serve" not in argv:
        return None
    return argv[argv.index("serve") + 1 :]


def find_daemon() -> int:
    """PID 1 (the image's entrypoint), or else (`docker run --init`) the daemon's process."""
    if serve_arguments(1) is not None:
        return 1
    pids = sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit())
    return next((pid for pid in pids if serve_arguments(pid) is not None), 1)


@contextlib.contextmanager
def as_the_daemon(pid: int) -> Iterator[None]:
    """The daemon's environment and working directory (a relative --config path), when
    they can be read; ours otherwise (in the container they are the same)."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        with contextlib.suppress(OSError):
            raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            os.environ.clear()
            os.environ.update(v.split("=", 1) for v in raw.split("\0") if "=" in v)
        with contextlib.suppress(OSError):
            os.chdir(os.readlink(f"/proc/{pid}/cwd"))
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


def first_listener(pid: int) -> tuple[str, str, int]:
    from coordinator.commands.cli import serve, settings_from_options

    args = serve_arguments(pid) or []
    with as_the_daemon(pid):
        ctx = serve.make_context("serve", args)
        listener = settings_from_options(ctx.params).effective_listeners[0]
    host = "127.0.0.1" if listener.host in WILDCARDS else listener.host
    return listener.protocol.value, host, listener.port


async def api_versions(host: str, port: int) -> bool:
    conn = await asyncio.wait_for(connect(host, port, "healthcheck"), 3)
    try:
        answer = await asyncio.wait_for(conn.request(ApiVersionsRequest(), 0), 3)
        return isinstance(answer, ApiVersionsResponse) and answer.error_code == 0
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    pid = int(argv[argv.index("--pid") + 1]) if "--pid" in argv else find_daemon()
    protocol, host, port = first_listener(pid)
    try:
        if protocol == "PLAINTEXT":
            return 0 if asyncio.run(api_versions(host, port)) else 1
        socket.create_connection((host, port), 3).close()
        return 0
    except (OSError, TimeoutError) as exc:
        print(f"unhealthy: {protocol}://{host}:{port}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
