"""``group-coordinator analyze JOURNAL_PATH... --out DIR_OR_URI``.

Also ``python -m coordinator.analytics`` and, for ``spark-submit``, the file
``coordinator/analytics/__main__.py``. The master and Spark settings the user gives
(``--master``, ``--conf``, or spark-submit's own) always win. Under them, settings for a
job of this size (``analysis_settings``): a journal of a few hundred entries took minutes
with Spark's defaults (its web UI, 200 shuffle partitions, a JVM tuned for hours of work)
and filled the terminal with stage progress bars.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..shared.private_files import private_tree
from . import class_archive
from .job import Analysis, AnalysisOptions
from .locations import is_uri, local_path, table_root

APP_NAME = "group-coordinator-analyze"


def _parse_conf(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    confs: dict[str, str] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE", param_hint="--conf")
        confs[key.strip()] = setting
    return confs


@click.command()
@click.argument("journal_paths", nargs=-1, required=True)
@click.option(
    "--out",
    required=True,
    help="where the Parquet tables go: a directory or a URI (file://, hdfs://, s3a://...)",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="local directory for report.html and the charts [default: --out when it is local]",
)
@click.option(
    "--master",
    default=None,
    help="Spark master URL (local[*], spark://HOST:PORT, yarn...) [default: spark-submit's, "
    "else Spark's own: local[*]]",
)
@click.option(
    "--conf",
    "confs",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_parse_conf,
    help="a Spark setting, as spark-submit --conf (repeatable)",
)
@click.option(
    "--driver-memory",
    default=None,
    metavar="SIZE",
    help="spark.driver.memory, e.g. 4g (under spark-submit use its --driver-memory)",
)
@click.option(
    "--spark-ui",
    is_flag=True,
    help="keep Spark's web UI (http://DRIVER:4040/) while the job runs (off by default)",
)
@click.option(
    "--full",
    is_flag=True,
    help="parse every journal file again (default: only files new or changed since the "
    "last run into the same --out)",
)
@click.option(
    "--in-memory/--staged-tables",
    default=None,
    help="keep the tables in memory and write them at the end (default for journals under "
    "32 MiB), or write and read back each before the next (default above: less memory)",
)
@click.option("--storm-threshold", default=5, show_default=True, type=click.IntRange(min=2))
@click.option(
    "--storm-window-s",
    default=60,
    show_default=True,
    type=click.IntRange(min=1),
    help="rebalances of one group within this many seconds that reach --storm-threshold",
)
@click.option("--top-groups", default=20, show_default=True, type=click.IntRange(min=1))
def analyze(
    journal_paths: tuple[str, ...],
    out: str,
    report_dir: Path | None,
    master: str | None,
    confs: dict[str, str],
    driver_memory: str | None,
    spark_ui: bool,
    full: bool,
    in_memory: bool | None,
    storm_threshold: int,
    storm_window_s: int,
    top_groups: int,
) -> None:
    """Rebalance analytics over journals (files or directories, of one or many nodes).

    Needs the analytics extra (pip install '.[analytics]') and Java 17+. With a remote
    master, journal paths (local, hdfs://, s3a://...) and --out must be visible to the
    executors; the charts and report.html are written by the driver to --report.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            "analyze needs PySpark: pip install 'group-coordinator[analytics]'"
        ) from exc
    for path in journal_paths:
        if not is_uri(path) and not Path(path).exists():
            raise click.BadParameter(f"{path!r} does not exist", param_hint="JOURNAL_PATHS")
    if report_dir is None:
        report_dir = local_path(out)
        if report_dir is None:
            raise click.BadParameter(
                f"{out!r} is not a local directory: say where the report goes with --report",
                param_hint="--report",
            )
    if driver_memory is not None:
        confs = {**confs, "spark.driver.memory": driver_memory}
    # What it writes names clients and hosts, as the journal does: the user's alone, from
    # the start (the JVM inherits the umask; analyze_journals makes sure at the end).
    os.umask(0o077)
    started = time.perf_counter()
    size = input_bytes(journal_paths)
    if in_memory is None:
        in_memory = size is not None and size < IN_MEMORY_BYTES
    options = AnalysisOptions(
        storm_threshold, storm_window_s, top_groups, incremental=not full, in_memory=in_memory
    )
    confs = with_class_archive(analysis_settings(size, confs, master, spark_ui=spark_ui))
    report_dir.mkdir(parents=True, exist_ok=True)
    spark_log = report_dir / SPARK_LOG
    click.echo(
        f"analyzing {_size(size)} of journals on {master or confs.get('spark.master', 'local[*]')}"
        f" (Spark's own output: {spark_log})"
    )
    with jvm_output_to(spark_log):
        spark = spark_session(master, confs)
    try:
        on = spark.sparkContext.master
        analysis, report = analyze_journals(spark, list(journal_paths), out, report_dir, options)
    finally:
        if "-XX:ArchiveClassesAtExit=" in confs.get("spark.driver.extraJavaOptions", ""):
            # The JVM writes it as it exits, for some tens of seconds: say why we wait.
            click.echo("saving Spark's classes for faster later runs (the first run only)")
        try:
            spark.stop()
        finally:
            end_jvm()
    t = analysis.totals
    click.echo(
        f"{t['entries']} entries, {t['groups']} groups, {t['rebalances']} rebalances, "
        f"{t['storms']} storms in {time.perf_counter() - started:.1f}s on {on} "
        f"({analysis.files_parsed} journal files parsed); "
        f"tables: {table_root(out)}; report: {report}"
    )


#: What to say when Spark cannot start for want of Java.
NO_JAVA = (
    "analyze runs on Spark, which needs Java 17 or newer: install a JDK or JRE"
    " (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
)


def java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return True
    return shutil.which("java") is not None


#: Where Spark's own output goes (its log, warnings): the terminal gets one line of progress.
SPARK_LOG = "spark.log"
#: A journal below this is analysed in a JVM that compiles less and collects garbage simply:
#: its optimising compiler and parallel collector cost more than they save in a short job.
SMALL_INPUT_BYTES = 256 * 2**20
#: A journal below this has its tables kept in memory (cached) and written at the end: a
#: few Spark jobs per table fewer. (Cached tables spill to disk if memory runs short.)
IN_MEMORY_BYTES = 32 * 2**20
#: Input per shuffle partition (Spark's own target size for adaptive coalescing).
BYTES_PER_SHUFFLE_PARTITION = 64 * 2**20
SHUFFLE_PARTITIONS_MAX = 200  # Spark's default, which was every job's
#: A small job's driver JVM: the client compiler only, the serial collector.
SMALL_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: Below this, queries are evaluated, not compiled: generating and compiling Java for every
#: operator (Janino, then the JIT) cost a quarter of a 1,000-entry job's CPU, to run code
#: over a few rows. The plan's text for the (off) web UI in its short form.
INTERPRETED_BYTES = 32 * 2**20
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.ui.explainMode": "simple",
}


def analysis_settings(
    size: int | None, confs: dict[str, str], master: str | None, *, spark_ui: bool = False
) -> dict[str, str]:
    """Spark settings sized to ``size`` bytes of journals (None: not known, remote paths),
    under the user's ``confs``, which win. Under spark-submit the session exists already:
    its settings are spark-submit's, and nothing is added."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return dict(confs)
    settings = {
        "spark.ui.enabled": "true" if spark_ui else "false",
        "spark.ui.showConsoleProgress": "false",  # the stage progress bars
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
    }
    if size is not None:
        partitions = math.ceil(size / BYTES_PER_SHUFFLE_PARTITION)
        settings["spark.sql.shuffle.partitions"] = str(
            min(max(partitions, 1), SHUFFLE_PARTITIONS_MAX)
        )
        if size < INTERPRETED_BYTES:
            settings.update(INTERPRETED)
            if spark_ui:
                del settings["spark.sql.ui.explainMode"]
        if size < SMALL_INPUT_BYTES:
            local = (master or confs.get("spark.master") or "local[*]").startswith("local")
            if local:
                settings["spark.driver.extraJavaOptions"] = " ".join(SMALL_JVM)
    return {**settings, **confs}


def with_class_archive(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the class archive's options (``class_archive``) added to a small
    local job's driver JVM options, when those are ours (the user's are left alone)."""
    if settings.get("spark.driver.extraJavaOptions") != " ".join(SMALL_JVM):
        return settings
    if jvm_running():
        return settings  # its options were set when it started: claim no archive to write
    options = [*SMALL_JVM, *class_archive.jvm_options()]
    return {**settings, "spark.driver.extraJavaOptions": " ".join(options)}


#: How long the driver JVM may take to exit (writing the class archive takes the most).
JVM_EXIT_TIMEOUT_S = 120.0


def end_jvm(timeout_s: float = JVM_EXIT_TIMEOUT_S) -> None:
    """Ends the Spark JVM this process started and waits for it: a command ends with all
    its processes. (Left alone, it exits only when this process has, and then writes the
    class archive for tens of seconds with nobody waiting.) Under spark-submit, or with no
    JVM of ours, nothing to do."""
    import subprocess

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    with contextlib.suppress(Exception):
        gateway.close()  # Py4J's connections and callback server, on this side
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()  # the JVM exits when its standard input ends
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


def jvm_running() -> bool:
    """Whether this process started its Spark JVM already (a session stopped keeps it)."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def input_bytes(paths: tuple[str, ...] | list[str]) -> int | None:
    """The journals' size, when they are all local."""
    total = 0
    for path in paths:
        if is_uri(path):
            return None
        p = Path(path)
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        total += sum(f.stat().st_size for f in files)
    return total


def _size(size: int | None) -> str:
    if size is None:
        return "remote"
    if size < 2**20:
        return f"{size / 1024:.0f} KiB"
    return f"{size / 2**20:.1f} MiB"


@contextlib.contextmanager
def jvm_output_to(path: Path) -> Iterator[None]:
    """The JVM that the Spark session starts writes its output (log lines, warnings) to
    ``path``: it inherits the standard error this process has while it starts; ours is
    put back at once. (Its errors still reach the user: they are raised in Python.)"""
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    except Exception:
        os.dup2(saved, 2)
        tail = path.read_text(errors="replace").strip().splitlines()[-5:]
        if tail:
            click.echo("\n".join(tail), err=True)  # why the JVM did not start
        raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def spark_session(master: str | None = None, confs: dict[str, str] | None = None) -> Any:
    """A Spark session with the user's master and settings only; a click error in one line
    when there is no Java to run it.

    Under spark-submit the session already has its master and configuration, and
    ``getOrCreate`` keeps them. The one setting made here is the SQL session time zone
    (UTC, so dates and minutes do not depend on the driver's zone), and only when the
    user did not set it.
    """
    if not java_available():
        raise click.ClickException(NO_JAVA)
    from pyspark.sql import SparkSession

    confs = dict(confs or {})
    effective_master = master or confs.get("spark.master")
    if effective_master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        effective_master = "local[*]"  # what Spark picks when nobody says
    if effective_master is not None and effective_master.startswith("local"):
        # A local driver needs no address but loopback (and then does not warn about it).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(APP_NAME)
    if master is not None:
        builder = builder.master(master)
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not spark.sparkContext.getConf().contains("spark.sql.session.timeZone"):
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def analyze_journals(
    spark: Any, paths: list[str], out: str | Path, report_dir: Path, options: AnalysisOptions
) -> tuple[Analysis, Path]:
    """Run the job, draw the charts, write the report; returns the analysis and report."""
    from . import charts, job, report

    resolved = [p if is_uri(p) else str(Path(p).resolve()) for p in paths]
    analysis = job.run(spark, resolved, table_root(out), options)
    started = time.perf_counter()
    report_dir.mkdir(parents=True, exist_ok=True)
    pngs = charts.draw(analysis, report_dir / "charts")
    analysis.phases["charts"] = time.perf_counter() - started
    write_summary(analysis, report_dir / SUMMARY_FILE)
    page = report.write(analysis, pngs, report_dir, options)
    analysis.phases["report"] = time.perf_counter() - started - analysis.phases["charts"]
    # The tables and the report name clients and hosts, as the journal does: as private.
    for written in (report_dir, local_path(out)):
        if written is not None:
            private_tree(written)
    return analysis, page


#: Beside report.html: the totals, top groups and storms the report shows, as JSON, for
#: other tools (the daemon's web console, ``--http-analytics``) to show without Spark.
SUMMARY_FILE = "summary.json"


def write_summary(analysis: Any, path: Path) -> None:
    summary = {
        "generated_ms": int(time.time() * 1000),
        "totals": analysis.totals,
        "top_groups": analysis.top_groups,
        "storms": analysis.storms,
    }
    path.write_text(json.dumps(summary, default=_json_value, indent=1) + "\n")


def _json_value(value: Any) -> str:
    """Times to the millisecond, as the journal has them (not Python's microseconds)."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds")
    return str(value)
