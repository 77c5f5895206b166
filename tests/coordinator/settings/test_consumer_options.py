"""The group.consumer.* options: Kafka's defaults, and the bounds Kafka checks at start."""

from __future__ import annotations

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


def test_consumer_group_defaults_are_kafkas(captured: list[Settings]) -> None:
    assert CliRunner().invoke(cli.main, ["serve"], env={}).exit_code == 0
    c = captured[0].group.consumer
    assert (c.session_timeout_ms, c.min_session_timeout_ms, c.max_session_timeout_ms) == (
        45000,
        45000,
        60000,
    )
    assert (c.heartbeat_interval_ms, c.min_heartbeat_interval_ms) == (5000, 5000)
    assert (c.max_heartbeat_interval_ms, c.max_size) == (15000, 2147483647)


def test_a_short_session_needs_a_lower_minimum(captured: list[Settings]) -> None:
    short = ["serve", "--group-consumer-session-timeout-ms", "2000"]
    result = CliRunner().invoke(cli.main, short, env={})
    assert result.exit_code == 2
    assert (
        "group.consumer.session.timeout.ms must be greater than or equal to"
        " group.consumer.min.session.timeout.ms" in result.output
    )
    env = {"GROUP_COORDINATOR_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS": "1000"}
    args = [*short, "--group-consumer-heartbeat-interval-ms", "500"]
    args += ["--group-consumer-min-heartbeat-interval-ms", "100"]
    result = CliRunner().invoke(cli.main, args, env=env)
    assert result.exit_code == 0, result.output
    c = captured[0].group.consumer
    assert (c.session_timeout_ms, c.heartbeat_interval_ms) == (2000, 500)


def test_the_heartbeat_interval_must_be_shorter_than_the_session(
    captured: list[Settings],
) -> None:
    args = ["serve", "--group-consumer-heartbeat-interval-ms", "50000"]
    args += ["--group-consumer-max-heartbeat-interval-ms", "60000"]
    result = CliRunner().invoke(cli.main, args, env={})
    assert result.exit_code == 2
    assert "group.consumer.heartbeat.interval.ms must be less than" in result.output
