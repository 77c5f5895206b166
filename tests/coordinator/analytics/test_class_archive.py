"""The driver JVM's class archive in the user's cache: written by one run, mapped by the
next only once the JVM says it wrote all of it, never by two runs at once (no JVM here:
what each run would be told to do)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coordinator.analytics import class_archive, command
from coordinator.analytics.command import (
    NO_JAVA,
    SMALL_JVM,
    analysis_settings,
    java_available,
    with_class_archive,
)

pytestmark = pytest.mark.skipif(not java_available(), reason=NO_JAVA)


def option(options: list[str], name: str) -> str | None:
    found = [o.split("=", 1)[1] for o in options if o.startswith(f"-XX:{name}=")]
    return found[0] if found else None


def test_the_first_run_writes_the_archive_and_a_later_run_maps_it(tmp_path: Path) -> None:
    first = class_archive.jvm_options(tmp_path)
    part = option(first, "ArchiveClassesAtExit")
    assert part is not None and option(first, "SharedArchiveFile") is None
    # While its JVM runs (and writes at exit), another run neither maps nor writes one.
    assert class_archive.jvm_options(tmp_path) == []
    # Cut short (no "written" in the JVM's log): still not mapped, a crash if it were.
    Path(part).write_bytes(b"half an archive")
    assert class_archive.jvm_options(tmp_path) == []
    (log,) = tmp_path.glob("*.part.log")
    log.write_text(f"[9.1s][info][cds,dynamic] {class_archive.WRITTEN} 0x0 - 0x1 [...]\n")
    later = class_archive.jvm_options(tmp_path)
    archive = option(later, "SharedArchiveFile")
    assert archive is not None and Path(archive).read_bytes() == b"half an archive"
    assert not Path(part).exists() and not log.exists()
    assert class_archive.jvm_options(tmp_path) == later
    # The JVM's warnings (about classes it cannot archive) go to its log, not the terminal.
    assert "-Xlog:all=warning:stderr" in later


def test_an_archive_never_finished_is_written_again_later(tmp_path: Path) -> None:
    class_archive.jvm_options(tmp_path)
    (log,) = tmp_path.glob("*.part.log")
    old = log.stat().st_mtime - class_archive.STALE_S - 1
    os.utime(log, (old, old))  # its writer died without a word
    assert option(class_archive.jvm_options(tmp_path), "ArchiveClassesAtExit") is not None


def test_no_archive_where_the_options_cannot_carry_the_path(tmp_path: Path) -> None:
    assert class_archive.jvm_options(tmp_path / "my cache") == []
    assert class_archive.jvm_options(tmp_path / "a:b") == []


def test_only_a_small_local_jobs_own_jvm_options_get_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # A JVM started already (by a session before) keeps its options: nothing is claimed.
    monkeypatch.setattr(command, "jvm_running", lambda: True)
    assert with_class_archive(analysis_settings(1000, {}, None)) == analysis_settings(
        1000, {}, None
    )
    assert not list(tmp_path.glob("group-coordinator/spark-classes/*"))
    monkeypatch.setattr(command, "jvm_running", lambda: False)
    small = with_class_archive(analysis_settings(1000, {}, None))
    assert small["spark.driver.extraJavaOptions"].startswith(" ".join(SMALL_JVM) + " ")
    assert "-XX:ArchiveClassesAtExit=" in small["spark.driver.extraJavaOptions"]
    assert list(tmp_path.glob("group-coordinator/spark-classes/*.part.log"))
    mine = {"spark.driver.extraJavaOptions": "-Xmx2g"}
    assert with_class_archive(analysis_settings(1000, mine, None)) == analysis_settings(
        1000, mine, None
    )
    remote = analysis_settings(1000, {}, "spark://h:7077")
    assert with_class_archive(remote) == remote


def test_the_cache_keeps_the_most_recently_used_archives(tmp_path: Path) -> None:
    names = [f"spark-{n:016x}.jsa" for n in range(4)]
    for age, name in enumerate(names):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (1_000_000 - age, 1_000_000 - age))  # names[0]: newest
    first = class_archive.jvm_options(tmp_path)  # this installation's, to be written
    assert option(first, "ArchiveClassesAtExit") is not None
    kept = sorted(p.name for p in tmp_path.glob("*.jsa"))
    assert kept == names[: class_archive.MAX_ARCHIVES - 1]  # and room for the new one
    (log,) = tmp_path.glob("*.part.log")
    Path(option(first, "ArchiveClassesAtExit") or "").write_bytes(b"archive")
    log.write_text(f"{class_archive.WRITTEN} 0x0 - 0x1\n")
    later = class_archive.jvm_options(tmp_path)
    assert option(later, "SharedArchiveFile") is not None
    assert len(list(tmp_path.glob("*.jsa"))) == class_archive.MAX_ARCHIVES
