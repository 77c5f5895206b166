"""The container's healthcheck script (docker/healthcheck.py) against a real daemon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Daemon, free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GROUP_COORDINATOR_")}
    return subprocess.run(
        [sys.executable, str(ROOT / "docker" / "healthcheck.py")],
        env={**clean, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_healthy_on_the_configured_listener_and_not_elsewhere(daemon: Daemon) -> None:
    assert check({"GROUP_COORDINATOR_LISTEN": f"0.0.0.0:{daemon.port}"}).returncode == 0
    listener = {"GROUP_COORDINATOR_LISTENER": f"PLAINTEXT://127.0.0.1:{daemon.port}"}
    assert check(listener).returncode == 0
    nobody = check({"GROUP_COORDINATOR_LISTEN": f"127.0.0.1:{free_port()}"})
    assert nobody.returncode == 1 and "unhealthy" in nobody.stderr
