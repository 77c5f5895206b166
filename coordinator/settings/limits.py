"""Connection limits: what one client may cost the daemon before it is cut off.

Each limit that is hit closes only the offending connection (the Kafka protocol has no error
for these), is logged, and is counted in ``ConnectionGuard.refused`` by reason, so one
broken or malicious client cannot hurt the members that share the daemon.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import structlog

log = structlog.get_logger("limits")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = 20000  # max.connections (Kafka: unlimited)
    max_connections_per_ip: int = 5000  # max.connections.per.ip (Kafka: unlimited)
    connections_max_idle_ms: int = 600000  # connections.max.idle.ms
    # Time to receive a whole request once its first byte has arrived (slow-loris).
    request_receive_timeout_ms: int = 30000
    # Unsent response bytes per connection before reading from it stops...
    max_buffered_response_bytes: int = 1 << 20
    # ...and how long it may stay that way before it is dropped.
    slow_reader_timeout_ms: int = 30000


class GuardedConnection(Protocol):
    peer_ip: str
    last_activity: float  # loop time of the last byte received or response sent
    partial_since: float | None  # loop time a still-incomplete request started
    write_blocked_since: float | None  # loop time the send buffer went over the limit
    busy: bool  # a parked request: not idle, whatever the clock says
    paused: bool  # we stopped reading: an incomplete request is not the client's fault

    def abort(self) -> None: ...


class ConnectionGuard:
    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.per_ip: Counter[str] = Counter()
        self.open = 0
        self.refused: Counter[str] = Counter()
        #: Told of every hit (the metrics' limit counter), besides the log and ``refused``.
        self.on_hit: Callable[[str], None] | None = None

    def admit(self, ip: str) -> str | None:
        """Count a new connection in, or say why it is refused."""
        if self.open >= self.limits.max_connections:
            return self.hit("max_connections", ip)
        if self.per_ip[ip] >= self.limits.max_connections_per_ip:
            return self.hit("max_connections_per_ip", ip)
        self.open += 1
        self.per_ip[ip] += 1
        return None

    def release(self, ip: str) -> None:
        self.open -= 1
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]

    def sweep(self, connections: Iterable[GuardedConnection], now: float) -> None:
        """Close connections that are idle, trickling a request, or not reading."""
        lim = self.limits
        for conn in list(connections):
            reason = None
            if (
                not conn.paused
                and conn.partial_since is not None
                and (now - conn.partial_since > lim.request_receive_timeout_ms / 1000)
            ):
                reason = "request_receive_timeout"
            elif conn.write_blocked_since is not None and (
                now - conn.write_blocked_since > lim.slow_reader_timeout_ms / 1000
            ):
                reason = "slow_reader_timeout"
            elif not conn.busy and now - conn.last_activity > lim.connections_max_idle_ms / 1000:
                reason = "connections_max_idle"
            if reason is not None:
                self.hit(reason, conn.peer_ip)
                conn.abort()  # not close(): that would wait to flush to a client not reading

    def hit(self, reason: str, ip: str) -> str:
        """Record a limit that closes ``ip``'s connection: counted, logged, reported."""
        self.refused[reason] += 1
        log.warning("connection limit", reason=reason, peer=ip)
        if self.on_hit is not None:
            self.on_hit(reason)
        return reason
