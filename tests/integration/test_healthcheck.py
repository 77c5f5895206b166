"""The container's healthcheck script (docker/healthcheck.py) against a real daemon: it checks
the listener the daemon was given, on its command line, in its environment or in its
--config file (it reads them from the daemon's process)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("GROUP_COORDINATOR_")}


def check(pid: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "docker" / "healthcheck.py"), "--pid", str(pid)],
        env={**CLEAN, "PYTHONPATH": str(ROOT)},  # nothing of the daemon's settings
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.terminate()
        proc.wait(10)


def serve(
    processes: list[subprocess.Popen[bytes]], cwd: Path, *args: str, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "coordinator.commands.cli", "serve", "--store", "memory", *args],
        cwd=cwd,
        env={**CLEAN, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(proc)
    return proc


def test_healthy_on_the_listener_of_the_command_line(daemon: Daemon) -> None:
    assert daemon.proc is not None
    result = check(daemon.proc.pid)  # `serve --listen 127.0.0.1:PORT`, nothing in the env
    assert result.returncode == 0, result.stderr


def test_healthy_on_the_listener_of_the_environment_or_the_config_file(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    by_env, by_file = free_port(), free_port()
    (tmp_path / "gc.toml").write_text(f'listener = ["PLAINTEXT://127.0.0.1:{by_file}"]\n')
    daemons = {
        by_env: serve(processes, tmp_path, env={"GROUP_COORDINATOR_LISTEN": f"127.0.0.1:{by_env}"}),
        by_file: serve(processes, tmp_path, "--config", "gc.toml", env={}),  # relative to its cwd
    }
    for port, proc in daemons.items():
        assert wait_until(lambda p=port: check_port(p), 15), port
        result = check(proc.pid)
        assert result.returncode == 0, result.stderr


def check_port(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def test_unhealthy_when_nothing_answers_on_the_configured_listener(
    processes: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    nobody = free_port()
    # A process whose command line is a daemon's, that never listens.
    argv = ["-c", "import time; time.sleep(30)", "group-coordinator", "serve"]
    proc = subprocess.Popen([sys.executable, *argv, "--listen", f"127.0.0.1:{nobody}"])
    processes.append(proc)
    time.sleep(0.2)
    result = check(proc.pid)
    assert result.returncode == 1 and f"127.0.0.1:{nobody}" in result.stderr, result.stderr
