"""The conformance suite against our own daemon, in process: every scenario passes on the
real code, and every scenario fails on each deliberately broken build it names (so no
scenario can pass vacuously)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.cluster.routing import PartitionState
from coordinator.conformance.probe import Target
from coordinator.conformance.registry import Scenario, all_scenarios
from coordinator.conformance.runner import FAIL, PASS, SKIP, Result, run
from coordinator.group.config import GroupConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.settings.config import Settings
from coordinator.shell.server import Server

from .faults import FAULTS, every_node_names_itself
from .seams import Broken, Fault, WireProxy

# A daemon in this process, the runner's clients on real sockets and real timers (sessions,
# rebalance timeouts, replies a broken build never sends).
pytestmark = pytest.mark.integration

MIN_SESSION_MS = 300
MAX_GROUP_SIZE = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def _started(settings: Settings, fault: Fault | None) -> AsyncIterator[tuple[Server, int]]:
    """A daemon of ``settings``, broken by ``fault`` through its seams (its state machine,
    its settings, a proxy in front of it that it advertises); (the daemon, the port a
    client is to use)."""
    proxy = None
    coordinator: Any = GroupCoordinator
    if fault is not None:
        settings = fault.settings(settings)
        coordinator = functools.partial(Broken, fault)
        if fault.wire:
            proxy = WireProxy(fault)
            port = await proxy.start()
            listen = ("127.0.0.1", _free_port())
            settings = dataclasses.replace(
                settings, listen=listen, advertised_listener=("127.0.0.1", port)
            )
            if isinstance(fault, every_node_names_itself):
                fault.node = (settings.node_id, "127.0.0.1", port)
    srv = Server(settings, coordinator=coordinator)
    await srv.start()
    try:
        if proxy is None:
            yield srv, srv.port
        else:
            proxy.upstream = ("127.0.0.1", srv.port)
            yield srv, settings.advertised[1]
    finally:
        await srv.stop()
        if proxy is not None:
            await proxy.stop()


async def _run_against_daemon(
    scenarios: list[Scenario], fault: Fault | None = None
) -> list[Result]:
    with tempfile.TemporaryDirectory() as data_dir:
        return await _run_with_data_dir(scenarios, Path(data_dir), fault=fault)


async def _run_with_data_dir(
    scenarios: list[Scenario],
    data_dir: Path,
    left: list[tuple[str, str]] | None = None,
    fault: Fault | None = None,
) -> list[Result]:
    """``left``: filled with the (group, state) pairs the run left behind."""
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
    async with _started(settings, fault) as (srv, port):
        target = Target(
            host="127.0.0.1",
            port=port,
            initial_rebalance_delay_ms=0,
            min_session_timeout_ms=MIN_SESSION_MS,
            max_group_size=MAX_GROUP_SIZE,
            slack_ms=500,
            # A broken build often never answers: don't wait long for it.
            reply_timeout_ms=3000,
        )
        results = await run(target, scenarios, parallel=16)
        if left is not None and srv.runtime is not None:
            left += [(g, x.state.value) for g, x in srv.runtime.groups.groups.items()]
        return results


#: Scenarios that need several brokers: a single daemon skips them.
CLUSTER_ONLY = {
    "testEveryBrokerNamesTheSameCoordinator",
    "testGroupRequestAtAnotherBrokerIsNotCoordinator",
}
CLUSTER_AREA = "FindCoordinator"


async def _run_against_cluster(
    scenarios: list[Scenario], database_url: str, fault: type[Fault] | None = None
) -> list[Result]:
    """Two nodes in this process sharing a PostgreSQL database (each with its own
    instance of ``fault``)."""
    async with contextlib.AsyncExitStack() as stack:
        nodes = []
        for node_id in (1, 2):
            settings = Settings(
                listen=("127.0.0.1", 0),
                node_id=node_id,
                store="postgres",
                database_url=database_url,
                lease_renew_interval_ms=200,
                topics=(("conformance", 4),),
                group=GroupConfig(
                    initial_rebalance_delay_ms=0, min_session_timeout_ms=MIN_SESSION_MS
                ),
            )
            broken = fault() if fault is not None else None
            nodes.append(await stack.enter_async_context(_started(settings, broken)))
        servers = [srv for srv, _port in nodes]
        for _ in range(400):  # until the partitions are spread, loaded, and agreed on
            if _settled(servers):
                break
            await asyncio.sleep(0.05)
        target = Target(host="127.0.0.1", port=nodes[0][1], slack_ms=500, reply_timeout_ms=3000)
        return await run(target, scenarios, parallel=4)
    raise AssertionError("unreachable")


def _settled(servers: list[Server]) -> bool:
    routings = [s.cluster.routing for s in servers if s.cluster is not None]
    if len(routings) != len(servers) or not all(r.mine for r in routings):
        return False
    owned = [p for r in routings for p, state in r.mine.items() if state is PartitionState.OWNED]
    everything = set(range(routings[0].partitions))
    agreed = all(r.owners == routings[0].owners for r in routings)
    return agreed and sorted(owned) == sorted(everything) and set(routings[0].owners) == everything


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
    wrong = [r for r in results if r.outcome != (SKIP if r.scenario.name in CLUSTER_ONLY else PASS)]
    assert not wrong, _summary(wrong)


async def test_our_cluster_passes_every_coordinator_scenario(postgres: Any) -> None:
    scenarios = [s for s in all_scenarios() if s.area == CLUSTER_AREA]
    assert {s.name for s in scenarios} >= CLUSTER_ONLY
    results = await _run_against_cluster(scenarios, postgres.create_database("conformance"))
    wrong = [r for r in results if r.outcome != PASS]
    assert not wrong, _summary(wrong)


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_each_fault_fails_every_scenario_that_names_it(
    fault: str, request: pytest.FixtureRequest
) -> None:
    scenarios = [s for s in all_scenarios() if fault in s.faults]
    if any(s.area == CLUSTER_AREA for s in scenarios):
        url = request.getfixturevalue("postgres").create_database(f"fault_{fault}")
        results = await _run_against_cluster(scenarios, url, FAULTS[fault])
    else:
        results = await _run_against_daemon(scenarios, FAULTS[fault]())
    survivors = [r for r in results if r.outcome != FAIL]
    assert not survivors, f"passed despite {fault}:\n{_summary(survivors)}"


async def test_the_suite_deletes_the_groups_it_leaves_empty(tmp_path: Path) -> None:
    scenarios = [
        s for s in all_scenarios() if s.area in ("Heartbeat", "OffsetCommit / OffsetFetch")
    ]
    assert scenarios
    left: list[tuple[str, str]] = []
    results = await _run_with_data_dir(scenarios, tmp_path, left)
    assert all(r.outcome == PASS for r in results)
    # Groups whose members have not expired yet stay (DeleteGroups refuses them, as Kafka).
    assert [g for g, state in left if state == "Empty"] == []


@pytest.mark.parametrize(
    "name",
    ["testClassicGroupMemberHeartbeatMaintainsSession", "testClassicGroupMemberSessionTimeout"],
)
async def test_a_host_that_stands_still_is_not_blamed_on_the_target(name: str) -> None:
    # The daemon shares the runner's event loop: blocking it for twice the session makes a
    # member that heartbeats on time lose its session for real. The scenario notices from
    # its own clock and is run again, rather than reporting a broken target.
    [s] = [x for x in all_scenarios() if x.name == name]
    loop = asyncio.get_running_loop()
    stall = loop.call_later(0.2, time.sleep, 2 * MIN_SESSION_MS / 1000)
    try:
        [result] = await _run_against_daemon([s])
    finally:
        stall.cancel()
    assert result.outcome == PASS, _summary([result])
