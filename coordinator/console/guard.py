"""What HTTP clients may hold of the console's port, apart from the Kafka listeners' limits.

aiohttp closes a connection only when it has been idle after a response, and never caps
how many are open, so clients that never finish their headers can hold descriptors until
the process reaches its limit (RLIMIT_NOFILE) and the Kafka listeners can accept nothing.
Here each accepted connection goes through a ``Gate`` in front of aiohttp's handler:

- at most ``max_connections`` console connections, and never more than the descriptor
  limit minus ``fd_reserve`` (kept for the Kafka listeners): past it a new connection is
  closed as soon as it is accepted;
- a request's line and headers must arrive within ``header_timeout_ms`` (from the
  connection, or from the first byte of a later request on it);
- a connection with no request in progress is closed after ``idle_timeout_ms``.

Every cap or timeout hit is logged (at most once per ``LOG_EVERY_S`` and kind, with counts)
and counted in the ``limit_hits`` metric by its option's name (``http_max_connections``...).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, cast

import structlog
from aiohttp import web, web_response
from aiohttp.http_exceptions import HttpProcessingError

from .settings import ConsoleSettings

log = structlog.get_logger("console")

#: A kind of limit is logged at most this often (a flood must not flood the log).
LOG_EVERY_S = 10.0


def descriptor_limit() -> int | None:
    """The process's soft RLIMIT_NOFILE (None: unlimited)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


class Gate(asyncio.Protocol):
    """One console connection: aiohttp's handler behind it, and the times it is judged by."""

    def __init__(self, guard: HttpGuard, inner: asyncio.Protocol) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        now = guard.loop.time()
        self.busy = 0  # requests in progress (their headers arrived)
        self.waiting_since = now  # since when no request is in progress
        self.first_byte: float | None = now  # a request (the first one: expected) begun

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.guard.gates[self] = None
        self.guard.by_handler[self.inner] = self
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self.busy and self.first_byte is None:
            self.first_byte = self.guard.loop.time()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.gates.pop(self, None)
        self.guard.by_handler.pop(self.inner, None)
        self.inner.connection_lost(exc)

    def request_started(self) -> None:
        self.busy += 1
        self.first_byte = None

    def request_ended(self) -> None:
        self.busy -= 1
        if not self.busy:
            self.waiting_since = self.guard.loop.time()

    def expired(self, now: float) -> str | None:
        """Why this connection must be closed now, if it must."""
        if self.busy:
            return None
        if self.first_byte is not None:
            if now - self.first_byte > self.guard.header_timeout_s:
                return "http_header_timeout_ms"
        elif now - self.waiting_since > self.guard.idle_timeout_s:
            return "http_idle_timeout_ms"
        return None


class _Refused(asyncio.Protocol):
    """A connection past the cap: closed at once, before it holds anything."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.Transport, transport).abort()


class HttpGuard:
    def __init__(self, settings: ConsoleSettings) -> None:
        self.loop: asyncio.AbstractEventLoop  # the running one, from start()
        self.header_timeout_s = settings.header_timeout_ms / 1000
        self.idle_timeout_s = settings.idle_timeout_ms / 1000
        self.max_connections = settings.max_connections
        self.fd_reserve = settings.fd_reserve
        self.cap = self.max_connections
        self.gates: dict[Gate, None] = {}
        self.by_handler: dict[asyncio.Protocol, Gate] = {}
        self.hits: Counter[str] = Counter()  # every hit since the start, by kind
        self._unlogged: Counter[str] = Counter()
        self._logged_at: dict[str, float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        #: Told of every hit by its option's name (the metrics' limit counter).
        self.on_hit: Callable[[str], None] | None = None

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        limit = descriptor_limit()
        if limit is not None and limit - self.fd_reserve < self.max_connections:
            self.cap = max(limit - self.fd_reserve, 1)
            log.warning(
                "console connections capped by the descriptor limit",
                cap=self.cap,
                descriptor_limit=limit,
                reserved_for_kafka=self.fd_reserve,
            )
        self._sweeper = self.loop.create_task(self._sweep_forever())

    async def close(self) -> None:
        if self._sweeper is None:
            return  # never started
        self._sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sweeper
        self._sweeper = None
        self._flush_log(force=True)

    def protocol(self, make_handler: Callable[[], asyncio.Protocol]) -> asyncio.Protocol:
        """The protocol of a connection just accepted: a gate, or a refusal past the cap."""
        if len(self.gates) >= self.cap:
            self.hit("http_max_connections")
            return _Refused()
        return Gate(self, make_handler())

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]
    ) -> Any:
        gate = self.by_handler.get(request.protocol)
        if gate is None:  # a test client without the site
            return await handler(request)
        gate.request_started()
        try:
            return await handler(request)
        finally:
            gate.request_ended()

    def hit(self, kind: str, count: int = 1) -> None:
        self.hits[kind] += count
        if self.on_hit is not None:
            for _ in range(count):
                self.on_hit(kind)
        self._unlogged[kind] += count
        self._flush_log()

    def _flush_log(self, force: bool = False) -> None:
        now = self.loop.time()
        for kind, count in list(self._unlogged.items()):
            if force or now - self._logged_at.get(kind, -LOG_EVERY_S) >= LOG_EVERY_S:
                self._logged_at[kind] = now
                del self._unlogged[kind]
                log.warning(
                    "console connection limit hit",
                    limit=kind,
                    closed=count,
                    open=len(self.gates),
                    cap=self.cap,
                )

    def sweep(self, now: float) -> None:
        for gate in list(self.gates):
            reason = gate.expired(now)
            if reason is not None and gate.transport is not None:
                gate.transport.abort()  # the descriptor is free now, not after a goodbye
                self.hit(reason)
        self._flush_log()

    async def _sweep_forever(self) -> None:
        every = min(max(min(self.header_timeout_s, self.idle_timeout_s) / 4, 0.05), 1.0)
        while True:
            await asyncio.sleep(every)
            self.sweep(self.loop.time())


class GuardedSite(web.BaseSite):
    """aiohttp's TCPSite, with every accepted connection passed through the guard."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, guard: HttpGuard) -> None:
        super().__init__(runner, backlog=128)
        self._where = (host, port)
        self._guard = guard

    @property
    def name(self) -> str:
        return f"http://{self._where[0]}:{self._where[1]}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        guard = self._guard
        self._server = await asyncio.get_running_loop().create_server(
            lambda: guard.protocol(server),
            *self._where,
            backlog=self._backlog,
            reuse_address=True,
        )


class ServerLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server log, minus a traceback per malformed request: anyone can send
    garbage to the port, so that is one debug line; the console's own errors keep theirs."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("aiohttp.server"), {})

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        error = kwargs.get("exc_info")
        if isinstance(error, HttpProcessingError):
            peer = args[0] if args else None
            log.debug("console: malformed request", peer=peer, error=error.message)
            return
        self.logger.exception(msg, *args, **kwargs)


def hide_server_version() -> None:
    """Name no library version in the Server header of any answer, the ones aiohttp makes
    itself for malformed requests included (its default is "Python/3.x aiohttp/3.y")."""
    web_response.SERVER_SOFTWARE = "group-coordinator"  # type: ignore[attr-defined]
