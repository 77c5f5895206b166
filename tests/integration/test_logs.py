"""What operators read: --log-format json gives one JSON object per line, and every
rebalance is logged with its reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.client import GroupMember

from .conftest import Daemon, wait_until

pytestmark = pytest.mark.integration


def json_lines(daemon: Daemon) -> list[dict[str, Any]]:
    return [json.loads(line) for line in daemon.log().splitlines() if line.strip()]


def test_json_logs_name_every_rebalance_and_its_reason(start_daemon: Callable[..., Daemon]) -> None:
    daemon = start_daemon(
        "--topic", "t:4", "--group-initial-rebalance-delay-ms", "0", "--log-format", "json"
    )

    async def scenario() -> tuple[str, str]:
        fast = {"heartbeat_interval_ms": 100, "session_timeout_ms": 10000}
        async with GroupMember(
            daemon.bootstrap, "g", protocols=["range"], topics=["t"], **fast
        ) as a:
            async with GroupMember(
                daemon.bootstrap, "g", protocols=["range"], topics=["t"], **fast
            ) as b:
                await asyncio.sleep(0.3)
                joined_id = b.member_id
            # b left (LeaveGroup on exit); a rejoins alone.
            await asyncio.sleep(0.5)
            return a.member_id, joined_id

    first, second = asyncio.run(scenario())
    assert wait_until(
        lambda: sum(e.get("event") == "RebalanceStarted" for e in json_lines(daemon)) >= 3, 5
    )
    lines = json_lines(daemon)  # every line parses as JSON
    assert all({"timestamp", "level", "event"} <= line.keys() for line in lines)
    reasons = [e["reason"] for e in lines if e["event"] == "RebalanceStarted"]
    assert any(first in r and "new member" in r for r in reasons), reasons
    assert any(second in r and "new member" in r for r in reasons), reasons
    assert any(second in r and "leav" in r.lower() for r in reasons), reasons
