"""Keyed timers on the event loop, for the sans-IO group state machine.

``schedule(key, deadline)`` replaces any earlier deadline for ``key``. The deadlines sit in
one heap behind one loop timer, armed for the earliest: a rebalance of 5,000 members arms
10,000 session timers, and a loop timer each (a handle object, a libuv heap entry, a
cancellation) cost several times a heap push. A heartbeat pushes a member's session
deadline forward many times per timeout, so moving a deadline later touches only a dict:
the heap keeps the older, earlier entry, and when it comes up the key goes back in at its
recorded deadline. The state machine still re-checks every firing.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable

import structlog

log = structlog.get_logger("coordinator")

#: Heap entries beyond twice the live timers before the heap is rebuilt.
COMPACT_SLACK = 1024


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
        # (deadline, key): every key in _deadlines has an entry at or before its deadline;
        # entries of cancelled or moved keys are dropped or put back when they come up.
        self._heap: list[tuple[int, str]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._armed_ms: int | None = None  # the deadline the loop timer is armed for
        self._firing = False

    def __len__(self) -> int:
        return len(self._deadlines)

    def deadline(self, key: str) -> int | None:
        return self._deadlines.get(key)

    def schedule(self, key: str, deadline_ms: int) -> None:
        deadlines = self._deadlines
        old = deadlines.get(key)
        deadlines[key] = deadline_ms
        if old is not None and old <= deadline_ms + 1:
            return  # its entry comes up first, then goes back in for the new deadline
        heap = self._heap
        heapq.heappush(heap, (deadline_ms, key))
        if len(heap) > 2 * len(deadlines) + COMPACT_SLACK:
            self._compact()
        armed = self._armed_ms
        if not self._firing and (armed is None or deadline_ms < armed):
            self._arm(deadline_ms)

    def cancel(self, key: str) -> None:
        self._deadlines.pop(key, None)  # its heap entry is dropped when it comes up

    def cancel_all(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._armed_ms = None
        self._deadlines.clear()
        self._heap.clear()

    def _compact(self) -> None:
        """Rebuild the heap from the live deadlines: cancelled far-off timers (a rebalance
        timeout armed and cancelled by every rebalance) would otherwise pile up."""
        self._heap[:] = [(deadline, key) for key, deadline in self._deadlines.items()]
        heapq.heapify(self._heap)  # in place: _expired may be holding the list

    def _arm(self, deadline_ms: int) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_ms = deadline_ms
        when = (deadline_ms - self._offset) / 1000
        self._handle = self._loop.call_at(when, self._expired)

    def _expired(self) -> None:
        self._handle = self._armed_ms = None
        heap, deadlines = self._heap, self._deadlines
        now = self._loop.time() * 1000 + self._offset
        due: dict[str, None] = {}
        while heap and heap[0][0] <= now:
            _, key = heapq.heappop(heap)
            deadline = deadlines.get(key)
            if deadline is None:
                continue  # cancelled
            if deadline > now:
                heapq.heappush(heap, (deadline, key))  # moved later meanwhile
            else:
                due[key] = None
        self._firing = True
        try:
            for key in due:
                # Firing one may cancel or move another, as separate loop timers allowed.
                deadline = deadlines.get(key)
                if deadline is None:
                    continue
                if deadline > now:
                    heapq.heappush(heap, (deadline, key))
                    continue
                del deadlines[key]
                try:
                    self._fire(key)
                except Exception:
                    # One timer's failure must not stop the others (each had its own
                    # loop timer before, whose failure the loop logged).
                    log.exception("timer failed", key=key)
        finally:
            self._firing = False
            if heap:
                self._arm(heap[0][0])
