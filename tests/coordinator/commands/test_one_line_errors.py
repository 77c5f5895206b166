"""A mistake in the daemon's options is one line naming the option (or the file's key) and
the fix, with exit status 2: never a traceback, a usage summary, or a silently other setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from coordinator.commands import cli
from coordinator.settings.config import Settings
from coordinator.shell.server import Server


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    seen: list[Settings] = []

    def fake_run(coro: Any) -> None:
        seen.append(coro.cr_frame.f_locals["settings"])
        coro.close()

    monkeypatch.setattr("uvloop.run", fake_run)
    monkeypatch.setattr("coordinator.telemetry.logs.configure", lambda *a: None)
    return seen


def serve(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, ["serve", *args], env={})
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--listen", "127.0.0.1:100547"], "port 100547 is out of range (0-65535)"),
        (["--listener", "SSL://127.0.0.1:70000"], "port 70000 is out of range"),
        (["--advertised-listener", "h:65536"], "port 65536 is out of range"),
        (
            ["--database-url", "postgresql://gc@127.0.0.1:notaport/gc"],
            "expected postgresql://USER@HOST:PORT/DATABASE",
        ),
        (["--store", "postgres", "--database-url", "mysql://x@h/db"], "expected postgresql://"),
        (
            ["--store", "sqlite", "--database-url", "postgresql://gc@h/gc"],
            "--database-url is only used with --store postgres",
        ),
        (
            ["--group-min-session-timeout-ms", "60000", "--group-max-session-timeout-ms", "1000"],
            "--group-min-session-timeout-ms (60000) is above --group-max-session-timeout-ms",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_a_bad_option_is_one_line_and_exit_2(
    captured: list[Settings], args: list[str], said: str
) -> None:
    code, output = serve(*args)
    assert code == 2 and not captured
    assert output.strip().count("\n") == 0, output  # one line: no usage summary
    assert said in output and "Traceback" not in output


def test_a_database_url_alone_means_postgres(captured: list[Settings]) -> None:
    code, output = serve("--database-url", "postgresql://gc:secret@127.0.0.1:5432/gc")
    assert code == 0, output
    [s] = captured
    assert s.store == "postgres"
    assert s.database_url == "postgresql://gc:secret@127.0.0.1:5432/gc"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # A repeatable option given one string: the file, the key and the fix.
        ('topic = "demo:6"\n', 'topic takes a list of values: topic = ["demo:6"]'),
        ('topic = ["demo"]\n', 'topic = ["demo"]: expected NAME:PARTITIONS'),
        ('group-max-size = "many"\n', 'group-max-size = "many": '),
        ('listen = "127.0.0.1:100547"\n', "port 100547 is out of range"),
    ],
)
def test_a_bad_value_in_the_config_file_names_the_file_and_key(
    captured: list[Settings], tmp_path: Path, text: str, said: str
) -> None:
    config = tmp_path / "gc.toml"
    config.write_text(text)
    code, output = serve("--config", str(config))
    assert code == 2 and not captured
    assert output.strip().count("\n") == 0, output
    assert f"{config}: " in output and said in output, output


async def test_the_start_says_which_store_keeps_the_state(tmp_path: Path) -> None:
    for store, said in (("sqlite", str(tmp_path.resolve())), ("memory", "nothing survives")):
        srv = Server(Settings(listen=("127.0.0.1", 0), store=store, data_dir=tmp_path))
        with capture_logs() as logs:
            await srv.start()
            await srv.stop()
        [line] = [e for e in logs if e["event"] == "store"]
        assert line["store"] == store and said in " ".join(map(str, line.values()))


def test_the_admin_commands_refuse_a_malformed_database_url_without_a_traceback() -> None:
    url = "postgresql://gc@127.0.0.1:notaport/gc"
    result = CliRunner().invoke(cli.main, ["users", "list", "--database-url", url], env={})
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "expected postgresql://USER@HOST:PORT/DATABASE" in result.output
