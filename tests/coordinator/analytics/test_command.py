"""``analyze``'s options, checked before Spark starts (no Java needed)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from coordinator.analytics.command import analyze, local_path


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
