"""The console's options reach the daemon like every other option; off, it costs nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_the_console_is_off_unless_asked_for(captured: list[Settings]) -> None:
    result = CliRunner().invoke(cli.main, ["serve"], env={})
    assert result.exit_code == 0, result.output
    assert (captured[0].console.listen, captured[0].console.admin) == (None, False)


def test_http_listen_and_admin_from_file_environment_and_command_line(
    captured: list[Settings], tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('http-listen = "127.0.0.1:8081"\n')
    result = CliRunner().invoke(cli.main, ["serve", "--config", str(config)], env={})
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        cli.main,
        ["serve", "--http-listen", "0.0.0.0:8080"],
        env={"GROUP_COORDINATOR_HTTP_ADMIN": "true"},
    )
    assert result.exit_code == 0, result.output
    assert [(s.console.listen, s.console.admin) for s in captured] == [
        (("127.0.0.1", 8081), False),
        (("0.0.0.0", 8080), True),
    ]
    bad = CliRunner().invoke(cli.main, ["serve", "--http-listen", "8080"], env={})
    assert bad.exit_code == 2 and "HOST:PORT" in bad.output


@pytest.mark.integration  # starts a process
def test_without_the_console_the_daemon_imports_neither_aiohttp_nor_jinja2() -> None:
    code = (
        "import sys, coordinator.commands.cli, coordinator.shell.server;"
        "print(sorted(m for m in ('aiohttp', 'jinja2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
