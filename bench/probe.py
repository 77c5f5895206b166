"""The latency probe the attack benchmarks share: one member's request, timed again and
again while something else loads the daemon."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

#: How long the probe waits between requests (a member heartbeating hard, not a load).
PROBE_INTERVAL_S = 0.01


async def timed_requests(send: Callable[[], Awaitable[None]], seconds: float) -> list[float]:
    """Round trips of ``send`` (seconds, sorted), once every ``PROBE_INTERVAL_S`` for
    ``seconds``; ``send`` raises if the answer is an error."""
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sent = time.perf_counter()
        await send()
        latencies.append(time.perf_counter() - sent)
        await asyncio.sleep(PROBE_INTERVAL_S)
    return sorted(latencies)


def percentile_ms(latencies: list[float], q: float) -> float:
    """The ``q`` quantile of sorted latencies (seconds), in milliseconds."""
    return 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * q))]
