"""Options reach the daemon from the command line, the environment and a TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from coordinator.commands import cli
from coordinator.settings.config import Settings


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    seen: list[Settings] = []

    def fake_run(coro: Any) -> None:
        seen.append(coro.cr_frame.f_locals["settings"])
        coro.close()

    monkeypatch.setattr("uvloop.run", fake_run)
    monkeypatch.setattr("coordinator.telemetry.logs.configure", lambda *a: None)
    return seen


def test_defaults_match_kafka(captured: list[Settings]) -> None:
    result = CliRunner().invoke(cli.main, ["serve"], env={})
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.listen == ("127.0.0.1", 9092)
    assert s.advertised == ("127.0.0.1", 9092)
    assert s.group.initial_rebalance_delay_ms == 3000
    assert s.group.min_session_timeout_ms == 6000
    assert s.group.max_session_timeout_ms == 1800000
    assert s.group.max_size == 2147483647
    assert s.group.offset_metadata_max_bytes == 4096


def test_command_line_beats_environment_beats_config_file(
    captured: list[Settings], tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        'group_initial_rebalance_delay_ms = 100\nnode_id = 7\nlisten = "127.0.0.1:9300"\n'
    )
    env = {"GROUP_COORDINATOR_NODE_ID": "8", "GROUP_COORDINATOR_GROUP_MAX_SIZE": "5"}
    args = ["serve", "--config", str(config), "--node-id", "9", "--topic", "a:3", "--topic", "b:1"]
    result = CliRunner().invoke(cli.main, args, env=env)
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.node_id == 9  # command line
    assert s.group.max_size == 5  # environment
    assert s.group.initial_rebalance_delay_ms == 100  # file
    assert s.listen == ("127.0.0.1", 9300)
    assert s.topics == (("a", 3), ("b", 1))


@pytest.mark.parametrize(
    "args",
    [
        ["--listen", "nope"],
        ["--topic", "x:0"],
        ["--topic", "x"],
        ["--topic", "orders:6,payments:3"],  # one --topic per topic
        ["--topic", "bad name:1"],
    ],
    ids=str,
)
def test_bad_values_are_refused(captured: list[Settings], args: list[str]) -> None:
    result = CliRunner().invoke(cli.main, ["serve", *args])
    assert result.exit_code == 2
    assert not captured


def test_journal_and_metrics_are_off_unless_asked_for(captured: list[Settings]) -> None:
    result = CliRunner().invoke(cli.main, ["serve"], env={})
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.observability.journal_dir is None
    assert s.observability.metrics_listen is None


def test_journal_and_metrics_options_from_file_environment_and_command_line(
    captured: list[Settings], tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'journal_dir = "{tmp_path / "j"}"\njournal_rotate_seconds = 60\n')
    env = {"GROUP_COORDINATOR_METRICS_LISTEN": "127.0.0.1:9464"}
    args = ["serve", "--config", str(config), "--journal-max-bytes", "4096"]
    result = CliRunner().invoke(cli.main, args, env=env)
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.observability.journal_dir == tmp_path / "j"
    assert s.observability.journal_rotate_seconds == 60
    assert s.observability.journal_max_bytes == 4096
    assert s.observability.metrics_listen == ("127.0.0.1", 9464)


@pytest.mark.integration  # starts a process
def test_the_daemon_never_imports_spark_or_matplotlib() -> None:
    import subprocess
    import sys

    code = (
        "import sys, coordinator.commands.cli, coordinator.shell.server;"
        "import coordinator.telemetry.observability;"
        "import coordinator.journal, coordinator.telemetry.metrics;"
        "print(sorted(m for m in ('pyspark', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_version_and_no_arguments_help_the_user() -> None:
    from importlib.metadata import version

    shown = CliRunner().invoke(cli.main, ["--version"])
    assert shown.exit_code == 0 and version("group-coordinator") in shown.output
    bare = CliRunner().invoke(cli.main, [])
    assert "serve" in bare.output and "Usage:" in bare.output


def test_toml_keys_are_the_option_names(captured: list[Settings], tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        'topic = ["orders:6", "payments:3"]\ngroup-initial-rebalance-delay-ms = 0\n'
        "auto_create_topics = true\n"
    )
    result = CliRunner().invoke(cli.main, ["serve", "--config", str(config)], env={})
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.topics == (("orders", 6), ("payments", 3))
    assert s.group.initial_rebalance_delay_ms == 0
    assert s.auto_create_topics is True


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("topis = []\n", "unknown key 'topis' (did you mean 'topic'?)"),
        ("topics = []\n", "unknown key 'topics'"),  # the parameter's name, not an option's
        ("listen = \n", "Invalid value for '--config'"),  # not TOML
    ],
)
def test_a_bad_config_file_is_refused_in_one_line(
    captured: list[Settings], tmp_path: Path, text: str, said: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    result = CliRunner().invoke(cli.main, ["serve", "--config", str(config)], env={})
    assert result.exit_code == 2 and not captured
    assert said in result.output and "Traceback" not in result.output


def test_the_sample_config_file_is_accepted(captured: list[Settings]) -> None:
    sample = Path(__file__).resolve().parents[3] / "group-coordinator.toml"
    result = CliRunner().invoke(cli.main, ["serve", "--config", str(sample)], env={})
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.topics == (("demo", 6),)


def test_a_repeatable_option_takes_space_separated_values_from_the_environment(
    captured: list[Settings],
) -> None:
    env = {"GROUP_COORDINATOR_TOPIC": "orders:6 payments:3"}
    result = CliRunner().invoke(cli.main, ["serve"], env=env)
    assert result.exit_code == 0, result.output
    assert captured[0].topics == (("orders", 6), ("payments", 3))


def test_no_arguments_print_help_and_every_serve_option_explains_itself() -> None:
    result = CliRunner().invoke(cli.main, [], env={})
    assert result.exit_code == 0 and "Commands:" in result.output
    unexplained = [
        p.opts[0]
        for p in cli.serve.params
        if isinstance(p, click.Option) and p.expose_value and not p.help
    ]
    assert unexplained == []
    shown = CliRunner().invoke(cli.main, ["serve", "--help"], env={}).output
    assert "group.initial.rebalance.delay.ms" in shown and "offsets.retention.minutes" in shown


def test_analyze_without_java_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    journal = tmp_path / "journal.jsonl"
    journal.write_text("")
    result = CliRunner().invoke(cli.main, ["analyze", str(journal), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "needs Java 17 or newer" in result.output and "Traceback" not in result.output
