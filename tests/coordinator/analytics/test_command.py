"""``analyze``'s options, checked before Spark starts (no Java needed)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from coordinator.analytics.command import analysis_settings, analyze, input_bytes
from coordinator.analytics.locations import local_path


def test_a_remote_out_needs_a_local_report_directory(tmp_path: Path) -> None:
    result = CliRunner().invoke(analyze, [str(tmp_path), "--out", "s3a://bucket/analytics"])
    assert result.exit_code == 2
    assert "say where the report goes with --report" in result.output


def test_conf_must_be_key_equals_value(tmp_path: Path) -> None:
    result = CliRunner().invoke(analyze, [str(tmp_path), "--out", "o", "--conf", "novalue"])
    assert result.exit_code == 2
    assert "'novalue' is not KEY=VALUE" in result.output


def test_a_file_uri_out_is_a_local_report_directory(tmp_path: Path) -> None:
    assert local_path((tmp_path / "a b").as_uri()) == tmp_path / "a b"
    assert local_path("relative/dir") == Path("relative/dir")
    assert local_path("hdfs://namenode/analytics") is None


def test_a_small_local_journal_gets_settings_for_a_small_job(tmp_path: Path) -> None:
    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "journal.jsonl").write_bytes(b"x" * 300_000)
    size = input_bytes([str(tmp_path)])
    assert size == 300_000
    settings = analysis_settings(size, {}, None)
    assert settings["spark.ui.enabled"] == "false"  # no web UI on 4040 unless asked
    assert settings["spark.ui.showConsoleProgress"] == "false"  # no stage progress bars
    assert settings["spark.sql.adaptive.enabled"] == "true"
    assert settings["spark.sql.shuffle.partitions"] == "1"  # not 200 nearly empty tasks
    assert "TieredStopAtLevel=1" in settings["spark.driver.extraJavaOptions"]
    # Evaluated, not compiled: no Java generated and compiled for a few rows.
    assert settings["spark.sql.codegen.wholeStage"] == "false"
    assert settings["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"
    with_ui = analysis_settings(size, {}, None, spark_ui=True)
    assert with_ui["spark.ui.enabled"] == "true"
    assert "spark.sql.ui.explainMode" not in with_ui  # the UI's plans in full


def test_a_large_or_remote_journal_keeps_what_suits_it_and_the_user_always_wins() -> None:
    big = analysis_settings(2 * 2**30, {}, "local[*]")
    assert big["spark.sql.shuffle.partitions"] == "32"
    assert "spark.driver.extraJavaOptions" not in big  # a long job wants the full JIT
    assert "spark.sql.codegen.wholeStage" not in analysis_settings(64 * 2**20, {}, None)
    assert input_bytes(["hdfs:///journals", "."]) is None
    remote = analysis_settings(None, {}, "spark://h:7077")
    assert "spark.sql.shuffle.partitions" not in remote
    assert "spark.driver.extraJavaOptions" not in analysis_settings(1000, {}, "yarn")
    mine = {"spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "true"}
    assert analysis_settings(1000, mine, None).items() >= mine.items()
