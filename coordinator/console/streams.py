"""What live pages together may take of the daemon: one share of the event loop for all
their renders, and a number of streams per client as well as in all.

Each open page re-renders its view when something changed. Per page, a tenth of the loop
is too much once there are many: 40 open pages took heartbeat p99 from 10 ms to 0.6 s.
Here every render goes through one ``RenderBudget``: renders run one at a time, in the
order the pages asked (a fair queue), and after a render of ``r`` seconds the next waits
``r * (1/share - 1)``, so all pages together hold the loop ``share`` of the time at most,
and a member's request waits behind one render, never behind a queue of them. With many
pages open each page simply updates less often.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class RenderBudget:
    def __init__(self, share: float) -> None:
        self.share = share
        self._turn = asyncio.Lock()  # FIFO: every waiting page gets its turn in order
        self._next_at = 0.0
        self.renders = 0
        self.render_s = 0.0  # loop time all renders took, in all

    async def render(self, make: Callable[[], T]) -> tuple[T, float]:
        """``make()``'s result and the loop time it took, once the budget allows."""
        loop = asyncio.get_running_loop()
        async with self._turn:
            wait = self._next_at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            started = loop.time()
            result = make()
            spent = loop.time() - started
            self._next_at = loop.time() + spent * (1 / self.share - 1)
            self.renders += 1
            self.render_s += spent
            return result, spent


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
