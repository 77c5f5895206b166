"""The console's options (``--http-*``): where it listens and what one client may cost it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    listen: tuple[str, int] | None = None  # None: no console
    admin: bool = False  # the actions (delete a group, reset offsets, remove a static member)
    #: The ``analyze --report`` directory whose summary.json the Analysis page shows.
    analytics: Path | None = None
    # -- what HTTP clients may hold (the console's own limits, apart from the Kafka ones) --
    #: Console connections open at once; past it a new one is closed at once (and logged).
    max_connections: int = 512
    #: File descriptors the console leaves to the Kafka listeners: it never holds more
    #: than the process's descriptor limit (RLIMIT_NOFILE) minus this.
    fd_reserve: int = 512
    #: A request's line and headers must arrive within this of the connection opening or
    #: of its first byte (slow-loris).
    header_timeout_ms: int = 10_000
    #: A connection with no request in progress is closed after this.
    idle_timeout_ms: int = 60_000
    # -- who may address it --------------------------------------------------------------------
    #: Host header values answered (Django's ALLOWED_HOSTS; "*" for any); empty: the listen
    #: address and localhost's names.
    allowed_hosts: tuple[str, ...] = ()
    #: The origin browsers reach the console at behind a reverse proxy
    #: ("https://console.example.com"): actions and logins must come from it.
    public_origin: str | None = None
    #: Addresses of reverse proxies whose X-Forwarded-For/-Proto (or Forwarded) are believed.
    trusted_proxies: tuple[str, ...] = ()
    # -- live pages ----------------------------------------------------------------------------
    #: Live pages open at once, all clients together...
    max_streams: int = 200
    #: ...and per client (its session with ACLs, else its address).
    max_streams_per_client: int = 20
    #: The share of the event loop all live pages together may take to render.
    stream_budget: float = 0.05
    # -- logins ------------------------------------------------------------------------------
    #: Sessions one user may hold; a new login past it ends that user's oldest.
    max_sessions_per_user: int = 32
