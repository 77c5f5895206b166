"""Runs scenarios against a target, a few at a time, each bounded in time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse

from ..client.connection import connect
from .probe import Failure, Probe, Skipped, Target
from .registry import Scenario

PASS, FAIL, SKIP = "pass", "fail", "skip"
#: No scenario may take longer than this (they are designed for seconds).
SCENARIO_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Result:
    scenario: Scenario
    outcome: str
    seconds: float
    message: str = ""
    request: str = ""
    expected: str = ""
    actual: str = ""


async def advertised_versions(target: Target) -> dict[int, tuple[int, int]]:
    conn = await asyncio.wait_for(connect(target.host, target.port, "conformance"), 5)
    try:
        resp = await asyncio.wait_for(conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse), 5)
    finally:
        conn.close()
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


async def run_one(
    target: Target, versions: dict[int, tuple[int, int]], scenario: Scenario
) -> Result:
    start = time.monotonic()
    probe = Probe(target, versions, scenario.name)

    def done(outcome: str, message: str = "", failure: Failure | None = None) -> Result:
        elapsed = time.monotonic() - start
        if failure is None:
            return Result(scenario, outcome, elapsed, message)
        return Result(
            scenario, outcome, elapsed, message, failure.request, failure.expected, failure.actual
        )

    try:
        for key, version in scenario.requires:
            probe.version(key, at_least=version)
        await asyncio.wait_for(scenario.run(probe), SCENARIO_TIMEOUT_S)
    except Skipped as exc:
        return done(SKIP, str(exc))
    except Failure as exc:
        return done(FAIL, exc.what, exc)
    except TimeoutError:
        return done(FAIL, f"scenario did not finish within {SCENARIO_TIMEOUT_S:.0f}s")
    except Exception as exc:  # a closed connection, a decode error: the target broke it
        return done(FAIL, f"{type(exc).__name__}: {exc}")
    finally:
        probe.close()
    return done(PASS)


async def run(target: Target, scenarios: list[Scenario], parallel: int = 8) -> list[Result]:
    """Every scenario uses its own groups, so they may run side by side."""
    versions = await advertised_versions(target)
    gate = asyncio.Semaphore(parallel)

    async def gated(s: Scenario) -> Result:
        async with gate:
            return await run_one(target, versions, s)

    return list(await asyncio.gather(*(gated(s) for s in scenarios)))
