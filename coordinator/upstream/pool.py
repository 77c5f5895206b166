"""Upstream connections per upstream broker (I/O), reused across client connections.

A client connection leases one link per upstream broker it reaches and keeps it while it
lives: its requests stay in order on one upstream connection (a producer's pipelined
batches for one partition must not overtake each other), and one client's long-polling
Fetch never holds up another's. Given back idle, a link serves the next client (the
upstream login, if any, is not repeated).
"""

from __future__ import annotations

from .link import Link
from .settings import UpstreamSettings


class Pool:
    def __init__(self, address: tuple[str, int], settings: UpstreamSettings) -> None:
        self.address = address
        self._settings = settings
        self._idle: list[Link] = []
        #: Links ever opened (a gauge for tests and metrics).
        self.opened = 0

    def lease(self) -> Link:
        while self._idle:
            link = self._idle.pop()
            if link.idle:
                return link
            link.close()
        self.opened += 1
        return Link(self.address, self._settings)

    def give_back(self, link: Link) -> None:
        """A link its client is done with: kept for the next one (once the answers it
        still waits for are in), or closed when enough are kept."""
        full = len(self._idle) >= self._settings.idle_links_per_broker
        if link.closed or link.address != self.address or full:
            link.close()
        elif link.idle:
            self._idle.append(link)
        else:
            link.on_idle = self.give_back  # its last answers are read, then it is idle

    @property
    def idle_count(self) -> int:
        return len(self._idle)

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for link in idle:
            link.close()
