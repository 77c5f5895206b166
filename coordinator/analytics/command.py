"""``group-coordinator analyze JOURNAL_PATH... --out DIR``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import click

from .job import Analysis, AnalysisOptions


@click.command()
@click.argument("journal_paths", nargs=-1, required=True)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="where the tables, charts and report.html go",
)
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master URL (local[*], spark://HOST:PORT, yarn, ...)",
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
    out: Path,
    master: str,
    storm_threshold: int,
    storm_window_s: int,
    top_groups: int,
) -> None:
    """Rebalance analytics over journals (files or directories, of one or many nodes).

    Needs the analytics extra (pip install '.[analytics]') and Java 17+. With a remote
    master, journal paths (local, hdfs://, s3a://...) and --out must be visible to the
    executors; charts and report.html are written by the driver.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            "analyze needs PySpark: pip install 'group-coordinator[analytics]'"
        ) from exc
    for path in journal_paths:
        if not _is_uri(path) and not Path(path).exists():
            raise click.BadParameter(f"{path!r} does not exist", param_hint="JOURNAL_PATHS")
    options = AnalysisOptions(storm_threshold, storm_window_s, top_groups)
    started = time.perf_counter()
    spark = spark_session(master)
    try:
        analysis, report = analyze_journals(spark, list(journal_paths), out, options)
    finally:
        spark.stop()
    t = analysis.totals
    click.echo(
        f"{t['entries']} entries, {t['groups']} groups, {t['rebalances']} rebalances, "
        f"{t['storms']} storms in {time.perf_counter() - started:.1f}s; report: {report}"
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


def spark_session(master: str) -> Any:
    """A Spark session; a click error in one line when there is no Java to run it."""
    if not java_available():
        raise click.ClickException(NO_JAVA)
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        # A local driver needs no address but loopback (and then does not warn about it).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName("group-coordinator-analyze")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Journals are small next to what Spark's 200 default shuffle partitions are for.
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.adaptive.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def analyze_journals(
    spark: Any, paths: list[str], out: Path, options: AnalysisOptions
) -> tuple[Analysis, Path]:
    """Run the job, draw the charts, write the report; returns the analysis and report."""
    from . import charts, job, report

    out.mkdir(parents=True, exist_ok=True)
    resolved = [p if _is_uri(p) else str(Path(p).resolve()) for p in paths]
    analysis = job.run(spark, resolved, out, options)
    pngs = charts.draw(analysis, out / "charts")
    return analysis, report.write(analysis, pngs, out, options)


def _is_uri(path: str) -> bool:
    """hdfs://, s3a://, file://...: handed to Spark as given."""
    return "://" in path
