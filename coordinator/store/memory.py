"""A store that keeps nothing across restarts: for tests and for benchmarking the rest."""

from __future__ import annotations

import asyncio

from .base import LoadedState, Store, Write


class MemoryStore(Store):
    persistent = False

    def __init__(self) -> None:
        self.batches = 0

    async def open(self) -> LoadedState:
        return LoadedState()

    def write(self, batch: Write) -> asyncio.Future[None]:
        self.batches += 1
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def close(self) -> None:
        return None
