"""A daemon whose data directory cannot be written refuses to start, in one line.

The filesystems are small tmpfs mounts the test makes itself (it needs to be allowed to
mount, as root in a container usually is; elsewhere it is skipped).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import free_port

pytestmark = pytest.mark.integration  # mounts filesystems and starts the daemon


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mountpoint = tmp_path / "fs"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def serve(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator.commands.cli",
            "serve",
            "--listen",
            f"127.0.0.1:{free_port()}",
            "--data-dir",
            str(data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_refused_in_one_line(run: subprocess.CompletedProcess[str], data_dir: Path) -> None:
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    # The daemon's first line names the store it is opening; then the refusal, one line.
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "store=sqlite" in lines[0], lines
    [line] = lines[1:]
    assert f"data directory {data_dir} is not writable" in line


def test_a_full_data_directory_is_refused_at_start(small_fs: Path) -> None:
    data_dir = small_fs / "data"
    data_dir.mkdir()
    fd = os.open(small_fs / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            for _ in range(1024):
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    assert_refused_in_one_line(serve(data_dir), data_dir)


def test_a_read_only_data_directory_with_a_store_is_refused_at_start(small_fs: Path) -> None:
    data_dir = small_fs / "data"
    data_dir.mkdir()
    (data_dir / "coordinator.sqlite3").write_bytes(b"")
    remounted = subprocess.run(
        ["mount", "-o", "remount,ro", str(small_fs)], capture_output=True, text=True
    )
    if remounted.returncode != 0:
        pytest.skip(f"cannot remount read-only: {remounted.stderr.strip()}")
    assert_refused_in_one_line(serve(data_dir), data_dir)
