"""Keyed timers on the event loop, for the sans-IO group state machine.

``schedule(key, deadline)`` replaces any earlier deadline for ``key``. A heartbeat pushes a
member's session deadline forward many times per timeout, so rescheduling does not touch
the loop: only the deadline is recorded, and when the loop's handle fires early it re-arms
itself for the recorded deadline. The state machine still re-checks every firing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class KeyedTimers:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fire: Callable[[str], None],
        clock_offset_ms: float = 0.0,
    ) -> None:
        """Deadlines are in ms of the loop's clock plus ``clock_offset_ms``."""
        self._loop = loop
        self._offset = clock_offset_ms
        self._fire = fire
        self._deadlines: dict[str, int] = {}
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._deadlines)

    def deadline(self, key: str) -> int | None:
        return self._deadlines.get(key)

    def schedule(self, key: str, deadline_ms: int) -> None:
        self._deadlines[key] = deadline_ms
        handle = self._handles.get(key)
        if handle is not None:
            if handle.when() * 1000 + self._offset <= deadline_ms + 1:
                return  # fires first, then re-arms for the new deadline
            handle.cancel()
        self._arm(key, deadline_ms)

    def cancel(self, key: str) -> None:
        self._deadlines.pop(key, None)
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
        self._deadlines.clear()

    def _arm(self, key: str, deadline_ms: int) -> None:
        when = (deadline_ms - self._offset) / 1000
        self._handles[key] = self._loop.call_at(when, self._expired, key)

    def _expired(self, key: str) -> None:
        self._handles.pop(key, None)
        deadline = self._deadlines.get(key)
        if deadline is None:
            return
        if deadline > self._loop.time() * 1000 + self._offset:
            self._arm(key, deadline)
            return
        del self._deadlines[key]
        self._fire(key)
