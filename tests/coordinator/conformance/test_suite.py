"""The conformance suite against our own daemon, in process: every scenario passes on the
real code, and every scenario fails on each deliberately broken build it names (so no
scenario can pass vacuously)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from coordinator.config import Settings
from coordinator.conformance.probe import Target
from coordinator.conformance.registry import Scenario, all_scenarios
from coordinator.conformance.runner import FAIL, PASS, Result, run
from coordinator.group.config import GroupConfig
from coordinator.server import Server

from .faults import FAULTS

MIN_SESSION_MS = 300
MAX_GROUP_SIZE = 6


async def _run_against_daemon(scenarios: list[Scenario]) -> list[Result]:
    with tempfile.TemporaryDirectory() as data_dir:
        return await _run_with_data_dir(scenarios, Path(data_dir))


async def _run_with_data_dir(scenarios: list[Scenario], data_dir: Path) -> list[Result]:
    settings = Settings(
        listen=("127.0.0.1", 0),
        data_dir=data_dir,
        topics=(("conformance", 4),),
        group=GroupConfig(
            initial_rebalance_delay_ms=0,
            min_session_timeout_ms=MIN_SESSION_MS,
            max_size=MAX_GROUP_SIZE,
        ),
    )
    srv = Server(settings)
    await srv.start()
    try:
        target = Target(
            host="127.0.0.1",
            port=srv.port,
            initial_rebalance_delay_ms=0,
            min_session_timeout_ms=MIN_SESSION_MS,
            max_group_size=MAX_GROUP_SIZE,
            slack_ms=500,
            # A broken build often never answers: don't wait long for it.
            reply_timeout_ms=3000,
        )
        return await run(target, scenarios, parallel=16)
    finally:
        await srv.stop()


def _summary(results: list[Result]) -> str:
    return "\n".join(
        f"{r.scenario.name}: {r.outcome} {r.message} | expected {r.expected} | actual {r.actual}"
        for r in results
    )


def test_every_scenario_names_faults_that_exist() -> None:
    scenarios = all_scenarios()
    assert len(scenarios) >= 60
    for s in scenarios:
        assert s.faults, f"{s.name} names no fault that breaks it"
        unknown = set(s.faults) - set(FAULTS)
        assert not unknown, f"{s.name} names unknown faults {unknown}"
    used = {f for s in scenarios for f in s.faults}
    assert set(FAULTS) == used, f"faults no scenario catches: {set(FAULTS) - used}"


async def test_our_daemon_passes_every_scenario() -> None:
    results = await _run_against_daemon(all_scenarios())
    assert all(r.outcome == PASS for r in results), _summary(
        [r for r in results if r.outcome != PASS]
    )


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_each_fault_fails_every_scenario_that_names_it(
    fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios = [s for s in all_scenarios() if fault in s.faults]
    FAULTS[fault](monkeypatch)
    results = await _run_against_daemon(scenarios)
    survivors = [r for r in results if r.outcome != FAIL]
    assert not survivors, f"passed despite {fault}:\n{_summary(survivors)}"
