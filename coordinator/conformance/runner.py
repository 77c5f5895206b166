"""Runs scenarios against a target, a few at a time, each bounded in time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.apis.delete_groups import DeleteGroupsRequest
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
from protocol.errors import ErrorCode

from ..client.connection import connect
from .probe import Failure, Probe, Skipped, Stalled, Target
from .registry import Scenario

PASS, FAIL, SKIP = "pass", "fail", "skip"
#: No scenario may take longer than this (they are designed for seconds).
SCENARIO_TIMEOUT_S = 60.0
#: Runs of a scenario whose timing precondition failed (a stalled host) before it fails.
STALLED_ATTEMPTS = 3


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


CREATE_TOPICS, METADATA, DELETE_GROUPS = 19, 3, 42


async def ensure_topic(target: Target, versions: dict[int, tuple[int, int]]) -> None:
    """Offsets can only be committed for a topic the broker knows: create the suite's topic
    if it is missing and the target offers CreateTopics (best effort)."""
    if METADATA not in versions or CREATE_TOPICS not in versions:
        return
    conn = await asyncio.wait_for(connect(target.host, target.port, "conformance"), 5)
    try:
        v = min(versions[METADATA][1], BY_KEY[METADATA].max_version)
        topics = [MetadataRequestTopic(name=target.topic)]
        meta: Any = await asyncio.wait_for(
            conn.request(MetadataRequest(topics=topics, allow_auto_topic_creation=False), v), 5
        )
        if meta.topics and meta.topics[0].error_code == 0:
            return
        v = min(versions[CREATE_TOPICS][1], BY_KEY[CREATE_TOPICS].max_version)
        create = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name=target.topic,
                    num_partitions=target.topic_partitions,
                    replication_factor=1,
                )
            ],
            timeout_ms=5000,
        )
        resp: Any = await asyncio.wait_for(conn.request(create, v), 10)
        code = resp.topics[0].error_code
        if code not in (0, ErrorCode.TOPIC_ALREADY_EXISTS):
            raise RuntimeError(f"cannot create topic {target.topic}: error {code}")
    finally:
        conn.close()


async def run_one(
    target: Target,
    versions: dict[int, tuple[int, int]],
    scenario: Scenario,
    groups_used: list[str] | None = None,
) -> Result:
    start = time.monotonic()
    stalls: list[str] = []
    for _ in range(STALLED_ATTEMPTS):
        try:
            return await _attempt(target, versions, scenario, groups_used, start)
        except Stalled as exc:
            stalls.append(str(exc))
    message = f"timing precondition failed {len(stalls)} times: {'; '.join(stalls)}"
    return Result(scenario, FAIL, time.monotonic() - start, message)


async def _attempt(
    target: Target,
    versions: dict[int, tuple[int, int]],
    scenario: Scenario,
    groups_used: list[str] | None,
    start: float,
) -> Result:
    probe = Probe(target, versions, scenario.name)
    if groups_used is not None:
        probe.groups_used = groups_used

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
    except Stalled:
        raise  # run_one tries again
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
    await ensure_topic(target, versions)
    gate = asyncio.Semaphore(parallel)
    used: list[str] = []

    async def gated(s: Scenario) -> Result:
        async with gate:
            return await run_one(target, versions, s, used)

    results = list(await asyncio.gather(*(gated(s) for s in scenarios)))
    await delete_groups(target, versions, used)
    return results


async def delete_groups(
    target: Target, versions: dict[int, tuple[int, int]], groups: list[str]
) -> None:
    """Remove the groups the scenarios made (best effort: a group whose members have not
    expired yet stays, as does one another broker coordinates)."""
    if DELETE_GROUPS not in versions or not groups:
        return
    v = min(versions[DELETE_GROUPS][1], BY_KEY[DELETE_GROUPS].max_version)
    try:
        conn = await asyncio.wait_for(connect(target.host, target.port, "conformance"), 5)
    except (OSError, TimeoutError):
        return
    try:
        for i in range(0, len(groups), 100):
            request = DeleteGroupsRequest(groups_names=groups[i : i + 100])
            await asyncio.wait_for(conn.request(request, v), 10)
    except (OSError, TimeoutError, ConnectionError):
        pass
    finally:
        conn.close()
