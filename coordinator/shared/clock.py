"""The one clock everything above the sockets reads: milliseconds since the Unix epoch.

The daemon's ``LoopClock`` reads the event loop's monotonic clock, anchored to the wall clock
once at start: it never jumps with NTP, and persisted timestamps (heartbeats, commits, Empty
since) still mean the same thing after a restart. Tests drive a ``ManualClock`` instead.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class LoopClock:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        #: Add to the loop's clock (in ms) to get this clock's reading.
        self.offset_ms = time.time() * 1000 - loop.time() * 1000

    def now_ms(self) -> int:
        return int(self._loop.time() * 1000 + self.offset_ms)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += ms
