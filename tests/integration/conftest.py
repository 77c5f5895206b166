"""A real daemon process on 127.0.0.1 for the integration tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


#: How long a daemon may take to start listening: its imports alone took 14 s on a 2-core
#: machine busy with other work (a cluster node restarted beside a CPU hog).
START_TIMEOUT_S = 60

#: Kill/restart cycles of the tests that SIGKILL a daemon at a random moment while it
#: acknowledges commits: a handful in `make test`, 20 in `make chaos` (``KILL_CYCLES=20``).
KILL_CYCLES = int(os.environ.get("KILL_CYCLES", "5"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    def __init__(self, tmp: Path, *args: str) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.data_dir = tmp / "data"
        self.log_path = tmp / "daemon.log"
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "coordinator.commands.cli",
            "serve",
            "--listen",
            self.bootstrap,
            "--data-dir",
            str(self.data_dir),
            *self.args,
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited: {self.log_path.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"daemon did not start listening: {self.log_path.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    daemons: list[Daemon] = []

    def start(*args: str) -> Daemon:
        d = Daemon(tmp_path, *args)
        d.start()
        daemons.append(d)
        return d

    yield start
    for d in daemons:
        d.stop()


@pytest.fixture
def daemon(start_daemon: Callable[..., Daemon]) -> Daemon:
    """A daemon with a 6-partition topic and no initial rebalance delay."""
    return start_daemon("--topic", "t6:6", "--group-initial-rebalance-delay-ms", "0")


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


os.environ.setdefault("PYTHONUNBUFFERED", "1")
