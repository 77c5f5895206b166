"""What live pages together may take of the daemon: one share of the event loop for all
their renders, and a number of streams per client as well as in all.

Each open page re-renders its view when something changed. Per page, a tenth of the loop
is too much once there are many: 40 open pages took heartbeat p99 from 10 ms to 0.6 s.
Here every render goes through one ``RenderBudget``: renders run one at a time, in the
order the pages asked (a fair queue), and after a render of ``r`` seconds the next waits
``r * (1/share - 1)``, so all pages together hold the loop ``share`` of the time at most,
and a member's request waits behind one render, never behind a queue of them. With many
pages open each page updates less often; pages showing the same thing to the same viewer
share one render (the newest made after the page saw the change), so 200 pages of three
views cost three renders per change, not 200.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

T = TypeVar("T")

#: Renders kept for sharing (each a page's HTML or JSON; the oldest is dropped past this).
SHARED_RENDERS = 64


class RenderBudget:
    def __init__(self, share: float) -> None:
        self.share = share
        self._turn = asyncio.Lock()  # FIFO: every waiting page gets its turn in order
        self._next_at = 0.0
        self._shared: dict[Hashable, tuple[float, object]] = {}  # key -> (made at, render)
        self.renders = 0
        self.render_s = 0.0  # loop time all renders took, in all

    async def render(
        self, make: Callable[[], T], key: Hashable = None, newer_than: float = 0.0
    ) -> tuple[T, float]:
        """``make()``'s result and the loop time it took, once the budget allows; or, free,
        the last render of the same ``key`` if it was made after ``newer_than`` (loop time).
        A None result is not shared."""
        loop = asyncio.get_running_loop()
        async with self._turn:
            wait = self._next_at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if key is not None:
                found = self._shared.get(key)
                if found is not None and found[0] >= newer_than:
                    return cast(T, found[1]), 0.0
            started = loop.time()
            result = make()
            spent = loop.time() - started
            if key is not None and result is not None:
                self._shared.pop(key, None)
                self._shared[key] = (started, result)
                if len(self._shared) > SHARED_RENDERS:
                    del self._shared[next(iter(self._shared))]
            self._next_at = loop.time() + spent * (1 / self.share - 1)
            self.renders += 1
            self.render_s += spent
            return result, spent

    def charge(self, spent: float) -> None:
        """Count ``spent`` seconds of loop time a page took besides its render (sending)."""
        now = asyncio.get_running_loop().time()
        self._next_at = max(self._next_at, now) + spent * (1 / self.share - 1)


class StreamSlots:
    """Live streams open now, in all and per client (a session, or an address)."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.open: Counter[str] = Counter()

    def __len__(self) -> int:
        return sum(self.open.values())

    def refusal(self, client: str) -> tuple[int, str] | None:
        """(HTTP status, why) when ``client`` may not open another stream now."""
        if len(self) >= self.total:
            return 503, f"{self.total} live pages are open: try again later"
        if self.open[client] >= self.per_client:
            return 429, f"you have {self.per_client} live pages open: close one first"
        return None

    def take(self, client: str) -> None:
        self.open[client] += 1

    def give_back(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]
