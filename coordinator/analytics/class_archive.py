"""A class-data-sharing (CDS) archive of the Spark driver's classes, kept in the user's
cache: a local ``analyze`` JVM maps the classes it loaded last time instead of reading,
parsing and verifying them again from 250 jars (its start and first query take about
half the CPU then).

Java 17 writes such an archive when a JVM started with ``-XX:ArchiveClassesAtExit`` exits
(``analyze`` waits for its JVM to end, so the first run takes tens of seconds longer). The
next run takes it only once the JVM's own log says it was written in
full (a truncated archive crashes the JVM that maps it), then maps it with
``-XX:SharedArchiveFile``. One archive per Java and PySpark installation; a run that finds
another run's archive being written runs without one.

The cache is bounded: an archive (about 170 MB with PySpark 4.0) is kept per installation
for the ``MAX_ARCHIVES`` most recently used, older ones are deleted when a run starts.
Delete the cache directory (``~/.cache/group-coordinator/spark-classes``) to start again;
``--conf spark.driver.extraJavaOptions=...`` replaces these options altogether.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from pathlib import Path

#: What the JVM logs once the archive is written (and closed).
WRITTEN = "Written dynamic archive"
#: An archive that is neither written nor being written after this long is given up.
STALE_S = 3600.0
#: Archives kept (one per Java and PySpark installation: each venv has its own), the most
#: recently used; the cache holds at most this many, and one being written.
MAX_ARCHIVES = 2


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "group-coordinator" / "spark-classes"


def _java() -> Path | None:
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _key() -> str | None:
    """Names the Java and Spark installation: an archive only fits the ones it came from."""
    java = _java()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    stat = java.stat()
    parts = [str(java), str(stat.st_size), str(stat.st_mtime_ns), pyspark.__version__, str(jars)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def jvm_options(directory: Path | None = None) -> list[str]:
    """The driver JVM's options for the archive: map it when there is one, else have this
    JVM write it at exit; none when nothing can be cached (no Java, a path the options
    cannot carry, a cache that cannot be written, another run writing the archive)."""
    directory = directory or cache_dir()
    key = _key()
    # Spark splits extraJavaOptions on spaces, and -Xlog's file= ends at a colon.
    if key is None or any(c in str(directory) for c in " \t\n'\":,="):
        return []
    archive = directory / f"spark-{key}.jsa"
    part, log = archive.with_suffix(".part.jsa"), archive.with_suffix(".part.log")
    quiet = ["-Xlog:disable", "-Xlog:all=warning:stderr"]  # the JVM's warnings to its log
    try:
        if part.exists() and WRITTEN in _read(log):
            os.replace(part, archive)  # the newest written: a later run's if two wrote
            log.unlink(missing_ok=True)
        if archive.exists():
            os.utime(archive)  # used: the last to go when the cache is trimmed
            trim(directory)
            return [*quiet, f"-XX:SharedArchiveFile={archive}"]
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        trim(directory, keep=MAX_ARCHIVES - 1)  # room for the one this run writes
        with contextlib.suppress(FileNotFoundError):
            if time.time() - log.stat().st_mtime > STALE_S:
                log.unlink()  # a writer that died, or an archive cut short
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # this run writes it
        os.close(fd)
    except OSError:
        return []  # being written by another run, or no cache to write to
    part.unlink(missing_ok=True)
    return [
        *quiet,
        f"-XX:ArchiveClassesAtExit={part}",
        f"-Xlog:cds+dynamic=info:file={log}::filecount=0",
    ]


def trim(directory: Path, keep: int = MAX_ARCHIVES) -> None:
    """Deletes all but the ``keep`` most recently used archives, and archives cut short
    whose writer is long gone."""
    archives = sorted(
        (p for p in directory.glob("spark-*.jsa") if not p.name.endswith(".part.jsa")),
        key=_mtime,
        reverse=True,
    )
    for old in archives[keep:]:
        old.unlink(missing_ok=True)
    for part in directory.glob("spark-*.part.jsa"):
        log = part.with_name(part.name.removesuffix(".jsa") + ".log")
        if time.time() - max(_mtime(part), _mtime(log)) > STALE_S:
            part.unlink(missing_ok=True)
            log.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
