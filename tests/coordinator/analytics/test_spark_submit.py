"""``analyze`` is a normal Spark application: spark-submit to a standalone master (started
here, on loopback) runs it there, with the user's settings, tables to a URI, report local."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import coordinator.analytics.__main__ as entry_point
from bench import analytics as bench_analytics
from coordinator.analytics.command import (
    APP_NAME,
    INTERPRETED,
    NO_JAVA,
    SMALL_JVM,
    java_available,
)

from .standalone import spark_home, standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not java_available(), reason=NO_JAVA)]


def test_spark_submit_to_a_standalone_master_writes_tables_to_a_uri(tmp_path: Path) -> None:
    journals = tmp_path / "journals"
    journals.mkdir()
    truth = bench_analytics.generate(journals, 300, 10, 2)
    tables = tmp_path / "warehouse" / "rebalances"
    report = tmp_path / "report"
    with standalone_cluster(tmp_path / "spark") as cluster:
        env = {**cluster.env, "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
        done = subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
             "--driver-memory", "512m", "--executor-memory", "512m",
             "--conf", "spark.ui.enabled=false",
             # A small job's JVMs and evaluation, as a user of a small cluster would say.
             "--driver-java-options", " ".join(SMALL_JVM),
             "--conf", f"spark.executor.extraJavaOptions={' '.join(SMALL_JVM)}",
             *(a for k, v in INTERPRETED.items() for a in ("--conf", f"{k}={v}")),
             entry_point.__file__, str(journals),
             "--out", tables.as_uri(), "--report", str(report),
             "--conf", "spark.sql.shuffle.partitions=2"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        state = cluster.state()
    # It ran on the standalone master, not locally (spark-submit's --master was kept).
    assert f"on {cluster.url} (" in done.stdout
    assert [a["name"] for a in state["completedapps"]] == [APP_NAME]
    assert f"{truth.entries} entries" in done.stdout
    assert f"{sum(truth.rebalances.values())} rebalances" in done.stdout
    # Tables under the URI, the report where --report says, nothing named after the URI.
    assert list((tables / "tables" / "group_summary").glob("*.parquet"))
    assert (report / "report.html").is_file() and (report / "charts").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journals", "report", "spark",
                                                          "warehouse"]  # fmt: skip
    page = (report / "report.html").read_text()
    assert tables.as_uri() in page  # the tables are linked where they are
