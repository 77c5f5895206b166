"""``group-coordinator analyze`` as a user runs it: when it returns, none of its processes
(the Spark JVM writing its class archive at exit) is left running, and the class archive
cache stays within its bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.analytics import class_archive
from coordinator.analytics.command import NO_JAVA, java_available

from .journal import T0, Journal

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not java_available(), reason=NO_JAVA)]


def in_session(sid: int) -> list[str]:
    """The command lines of the processes running in session ``sid`` (an exited one that
    nobody reaped, a zombie, runs nothing: where pid 1 does not reap, they stay)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if int(fields[3]) == sid and fields[0] != "Z":  # state, ppid, pgrp, session
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def test_analyze_returns_with_no_process_left_and_a_bounded_cache(tmp_path: Path) -> None:
    j = Journal()
    j.join(0, T0, "g", "m-1", "app", "/h1")
    j.remove(0, T0 + 5_000, "g", "m-1", "left", reason="bye")
    j.write(tmp_path / "journal", 0)
    cache = tmp_path / "cache" / "group-coordinator" / "spark-classes"
    cache.mkdir(parents=True)
    # Archives of two other installations (venvs) used before: the oldest goes.
    for age, name in ((3000, "spark-0000000000000001.jsa"), (2000, "spark-0000000000000002.jsa")):
        (cache / name).write_bytes(b"x")
        then = (tmp_path / "journal").stat().st_mtime - age
        os.utime(cache / name, (then, then))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    command = [
        sys.executable,
        "-m",
        "coordinator.commands.cli",
        "analyze",
        "journal",
        "--out",
        "out",
    ]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, start_new_session=True, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert proc.returncode == 0, stderr[-2000:]
    assert "1 groups, 2 rebalances" in stdout
    assert "saving Spark's classes for faster later runs (the first run only)" in stdout
    assert in_session(proc.pid) == []  # its JVM ended with it
    # The newer of the two others was kept, beside the one this run wrote in full before
    # the command returned (mapped from the next run on): no more than the bound.
    assert sorted(p.name for p in cache.glob("*.jsa")) == sorted(
        ["spark-0000000000000002.jsa", *(p.name for p in cache.glob("*.part.jsa"))]
    )
    assert len(list(cache.glob("*.jsa"))) == class_archive.MAX_ARCHIVES
    (log,) = cache.glob("*.part.log")
    assert class_archive.WRITTEN in log.read_text()
