"""The TCP server: frames bytes, keeps responses in order, applies back-pressure. No group logic.

One ``KafkaConnection`` (an asyncio Protocol) per client connection. Requests on a
connection are handled one at a time and answered strictly in order: while a JoinGroup or
SyncGroup is parked, later requests on that connection wait (Kafka mutes the channel the
same way), and reading pauses if too many pile up. A parked Fetch waits for nothing but
its time (there are never records), so another request arriving ends it at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import signal
import ssl
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import structlog

from protocol.apis import BY_KEY, Api
from protocol.frames import FrameSplitter, FrameTooLarge, Request
from protocol.schema import Struct

from ..cluster.membership import ClusterMembership
from ..group.coordinator import GroupCoordinator
from ..handlers.connection_context import ConnectionContext
from ..handlers.consumer_heartbeat_lane import CONSUMER_GROUP_HEARTBEAT_KEY
from ..handlers.heartbeat_lane import HEARTBEAT_KEY
from ..handlers.metadata_lane import METADATA_KEY
from ..handlers.node import Coordinator
from ..handlers.offset_commit_lane import LaneCommit
from ..handlers.offsets import OFFSET_COMMIT_KEY
from ..handlers.outcome import CloseConnection
from ..security.config import Listener
from ..security.tls import principal_from_peercert, server_context
from ..settings.config import Settings, safe_url
from ..settings.limits import ConnectionGuard
from ..shared.clock import LoopClock
from ..shared.errors import StartupError
from ..store import MemoryStore, SqliteStore, Store
from ..store.postgres import PostgresStore
from ..telemetry.observability import Observability
from ..upstream.lag import LagGauges, LagReader
from ..upstream.proxy import Route, Upstream
from .connection import ConnectionProtocol, RawSaslToken, SendNow, response_frame
from .hot_reads import HOT_AFTER_READS, HotReads, heat
from .runtime import Runtime

if TYPE_CHECKING:
    from ..console.app import Console

log = structlog.get_logger("server")

# Stop reading from a client once this many of its requests wait behind a parked one.
MAX_QUEUED_REQUESTS = 64
# Requests handled per connection before the loop serves others: one client pipelining
# thousands of requests must not hold everyone else's heartbeats.
REQUESTS_PER_TURN = 16
# A heartbeat answered by the heartbeat lane costs about a quarter of the cheapest other
# request, so a turn takes four of them per request slot: 64 pipelined heartbeats are one
# turn, about as long as 16 other requests. A turn's answers go out in one write: written
# 16 at a time, the three extra writes cost a quarter of the server's CPU per heartbeat at
# depth 64 (bench.ab: 5.6 against 4.1 µs), for no more heartbeats per second.
HEARTBEATS_PER_SLOT = 4
# A Heartbeat request frame's first bytes (its api key): answered by the heartbeat lane.
HEARTBEAT_FRAME = HEARTBEAT_KEY.to_bytes(2, "big")
# A ConsumerGroupHeartbeat's: a steady one is answered by the consumer heartbeat lane.
CONSUMER_HEARTBEAT_FRAME = CONSUMER_GROUP_HEARTBEAT_KEY.to_bytes(2, "big")
# A Metadata's: answered by the Metadata lane (remembered answers).
METADATA_FRAME = METADATA_KEY.to_bytes(2, "big")
LANE_FRAMES = (HEARTBEAT_FRAME, CONSUMER_HEARTBEAT_FRAME, METADATA_FRAME)
# An OffsetCommit's: one that waits for its write does not hold the commits behind it.
OFFSET_COMMIT_FRAME = OFFSET_COMMIT_KEY.to_bytes(2, "big")
# A commit taken by the commit lane costs about a quarter of a general-path commit (bench.
# commit_metadata: 21 against 93 µs), so it counts as a heartbeat does: a turn takes 64 of
# them, about as long as 16 other requests, and their records go to the store together.
COMMIT_LANE_SLOTS = 1
# How long a refused connection stays open after its error response (or until the client
# closes it first).
CLOSE_GRACE_S = 0.5
# How long shutdown waits for closed connections to flush what they still have to send.
SHUTDOWN_FLUSH_S = 1.0


class KafkaConnection(asyncio.Protocol):
    def __init__(
        self,
        runtime: Runtime,
        connections: set[KafkaConnection],
        guard: ConnectionGuard | None = None,
        listener: Listener | None = None,
        on_lost: Callable[[], None] | None = None,
        upstream: Upstream | None = None,
        broker: int | None = None,
    ) -> None:
        self.runtime = runtime
        # In front of an upstream (--upstream): the requests it takes are forwarded, on
        # this connection's links to it (``route``: to upstream broker ``broker``, or any).
        self.upstream = upstream
        self.route = Route(broker) if upstream is not None else None
        self._forwarded: deque[asyncio.Future[bytes]] = deque()
        self._on_lost = on_lost
        self.listener = listener
        self.connections = connections
        self.guard = guard if guard is not None else ConnectionGuard(runtime.settings.limits)
        self.admitted = False
        self.peer_ip = "unknown"
        self.last_activity = runtime.loop.time()
        self.partial_since: float | None = None
        self.write_blocked_since: float | None = None
        self._drain_scheduled = False
        self.splitter = FrameSplitter(runtime.settings.socket_request_max_bytes)
        self._pre_auth_cap = False
        self.queue: deque[bytes] = deque()
        self.busy = False
        self.closed = False
        self.paused = False
        self.transport: asyncio.Transport | None = None
        self.ctx = ConnectionContext(client_host="/unknown")
        self.protocol = ConnectionProtocol(self.ctx, runtime.dispatcher.supports)
        # Responses produced during one drain turn, written with one call at its end: a
        # write per response was half the daemon's CPU under pipelined heartbeats.
        self._out: list[bytes] = []
        self._batching = False
        #: The parked request's API, version and correlation id (its reply is awaited).
        self._parked: tuple[Api, int, int] | None = None
        self._parked_reply: asyncio.Future[Any] | None = None
        #: OffsetCommits waiting for their writes, in request order (``_commit_waits``):
        #: the general path's (API, version, correlation id, future of the body) and the
        #: commit lane's (its answers ready, and the future of whether it was stored).
        self._commits: deque[
            tuple[Api, int, int, asyncio.Future[Any]] | tuple[LaneCommit, asyncio.Future[bool]]
        ] = deque()
        #: The last commit lane future ``_commits_done`` was added to (one per batch).
        self._lane_stored: asyncio.Future[bool] | None = None
        self._callback_context = contextvars.copy_context()
        #: Reads in a row the compiled lane answered whole, and the reader while the
        #: connection is hot (``hot_reads.py``).
        self._whole_reads = 0
        self.hot: HotReads | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer_ip = str(peer[0]) if peer else "unknown"
        self.ctx = self._context(transport)
        self.protocol = ConnectionProtocol(self.ctx, self.runtime.dispatcher.supports)
        if not self.ctx.authenticated:
            # Until SASL authentication succeeds a frame may be no larger than Kafka's
            # sasl.server.max.receive.size: an unauthenticated client must not make the
            # daemon buffer socket.request.max.bytes. Lifted once, on the first read after.
            self._pre_auth_cap = True
            self.splitter.max_frame_bytes = min(
                self.splitter.max_frame_bytes, self.runtime.settings.sasl_server_max_receive_size
            )
        if self.guard.admit(self.peer_ip) is not None:
            self.closed = True
            self.transport.abort()
            return
        self.admitted = True
        self.transport.set_write_buffer_limits(
            high=self.runtime.settings.limits.max_buffered_response_bytes
        )
        self.connections.add(self)

    def _context(self, transport: asyncio.BaseTransport) -> ConnectionContext:
        ctx = ConnectionContext(client_host=f"/{self.peer_ip}", listener=self.listener)
        ctx.upstream_broker = self.route.broker if self.route is not None else None
        if self.listener is not None:
            protocol = self.listener.protocol
            ctx.authenticated = not protocol.uses_sasl
            if protocol.uses_tls and not protocol.uses_sasl:
                # SSL: the principal is the client certificate's subject (if it sent one).
                ctx.principal = principal_from_peercert(transport.get_extra_info("peercert"))
        return ctx

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.cool()
        self.queue.clear()
        if self.upstream is not None and self.route is not None:
            self.upstream.release(self.route)
        self.connections.discard(self)
        if self.admitted:
            self.admitted = False
            self.guard.release(self.peer_ip)
        if self._on_lost is not None:
            self._on_lost()

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop reading its requests.
        self.write_blocked_since = self.runtime.loop.time()
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_blocked_since = None
        self._update_reading()
        if not self.busy and not self._drain_scheduled:
            self._drain()

    def _update_reading(self) -> None:
        if self.transport is None or self.closed or self.hot is not None:
            return
        want_pause = len(self.queue) > MAX_QUEUED_REQUESTS or self.write_blocked_since is not None
        if want_pause and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        elif not want_pause and self.paused and len(self.queue) <= MAX_QUEUED_REQUESTS // 2:
            self.paused = False
            if self.partial_since is not None:
                self.partial_since = self.runtime.loop.time()  # its clock restarts now
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        now = self.runtime.loop.time()
        self.last_activity = now
        if self._pre_auth_cap and self.ctx.authenticated:
            self._pre_auth_cap = False
            self.splitter.max_frame_bytes = self.runtime.settings.socket_request_max_bytes
        if (
            self.runtime.heartbeat_batch is not None
            and not self.queue
            and not self.busy
            and not self._drain_scheduled
            and not self._commits  # their answers go first, in request order
            and not self.splitter.buffered
            and self.upstream is None
            and self.write_blocked_since is None
            and self.ctx.authenticated
            and not self.closed
        ):
            data = self._answer_heartbeats(data)
            if not data:
                self._whole_reads += 1
                if self._whole_reads >= HOT_AFTER_READS:
                    self._whole_reads = 0
                    self.hot = heat(self)
                return
        self._whole_reads = 0
        try:
            frames = self.splitter.feed(data)
        except FrameTooLarge as exc:
            log.warning("frame refused", peer=self.ctx.client_host, reason=str(exc))
            limit = (
                "sasl_server_max_receive_size" if self._pre_auth_cap else "socket_request_max_bytes"
            )
            self.guard.hit(limit, self.peer_ip)
            self.close()
            return
        if not self.splitter.buffered:
            self.partial_since = None
        elif frames or self.partial_since is None:
            self.partial_since = now  # a new request has started arriving
        self.queue.extend(frames)
        if frames and self._parked_reply is not None:
            self.runtime.next_request_behind(self._parked_reply)  # may end a long poll
        if not self.busy and not self._drain_scheduled:
            self._drain()
        if len(self.queue) > MAX_QUEUED_REQUESTS and not self.paused:
            self._update_reading()

    # -- request processing ----------------------------------------------------------------

    def _answer_heartbeats(self, data: bytes) -> bytes:
        """The compiled lane answers the Heartbeat frames at the start of a read, with
        nothing queued before them (``fastlane/batch.py``); the rest is returned, to be
        framed and answered after them, in order."""
        runtime = self.runtime
        batch = runtime.heartbeat_batch
        assert batch is not None
        try:
            consumed, answers = batch.answer_read(
                data, self.ctx, runtime.now_ms(), self.splitter.max_frame_bytes, runtime.metrics
            )
        except Exception:
            log.exception("request failed", api="Heartbeat")
            self.close()
            return b""
        if not consumed:
            return data
        self._out.append(answers)
        if consumed < len(data):
            return data[consumed:]
        self.partial_since = None
        self._flush()
        return b""

    def _drain(self) -> None:
        self._drain_scheduled = False
        turn = REQUESTS_PER_TURN * HEARTBEATS_PER_SLOT
        self._batching = True
        runtime = self.runtime
        queue, ctx = self.queue, self.ctx
        now_ms: int | None = None  # read once per turn for heartbeats (and after others)
        answered = False
        try:
            while queue and not self.busy and not self.closed:
                if self.write_blocked_since is not None:
                    break  # resumed by resume_writing once the client reads again
                if turn <= 0:
                    self._drain_scheduled = True
                    runtime.loop.call_soon(self._drain)
                    break
                if self._commits and (
                    queue[0][:2] != OFFSET_COMMIT_FRAME or len(self._commits) >= MAX_QUEUED_REQUESTS
                ):
                    break  # in order: resumed once the commits before it are answered
                if self.upstream is not None:
                    if self.upstream.takes(queue[0], ctx, self.route):
                        if len(self._forwarded) >= self.upstream.settings.max_in_flight:
                            break  # resumed as the upstream answers
                        turn -= HEARTBEATS_PER_SLOT
                        self._forward(queue.popleft())
                        continue
                    if self._forwarded:
                        break  # answered in order: after the forwarded ones before it
                frame = queue.popleft()
                lead = frame[:2]
                if lead in LANE_FRAMES and ctx.authenticated:
                    if now_ms is None:
                        now_ms = runtime.now_ms()
                    try:
                        if lead == HEARTBEAT_FRAME:
                            data = runtime.answer_heartbeat(frame, ctx, now_ms)
                        elif lead == CONSUMER_HEARTBEAT_FRAME:
                            data = runtime.answer_consumer_heartbeat(frame, ctx, now_ms)
                        else:
                            data = runtime.answer_metadata(frame, ctx, now_ms)
                    except Exception:
                        self._lane_failed(frame)  # as _dispatch does for any other request
                        break
                    if data is not None:
                        self._out.append(data)  # a turn's answers go out in one write
                        answered = True
                        turn -= 1
                        continue
                elif lead == OFFSET_COMMIT_FRAME and ctx.authenticated:
                    if now_ms is None:
                        now_ms = runtime.now_ms()
                    try:
                        taken = runtime.answer_commit(frame, ctx, now_ms)
                    except Exception:
                        self._lane_failed(frame)
                        break
                    if taken is not None:
                        self._commit_taken(*taken)
                        turn -= COMMIT_LANE_SLOTS
                        continue
                turn -= HEARTBEATS_PER_SLOT
                self._process(frame)
                now_ms = None
        finally:
            self._batching = False
            if answered:
                self.last_activity = runtime.loop.time()
            self._flush()
        if self.paused:
            self._update_reading()

    def _lane_failed(self, frame: bytes) -> None:
        version = int.from_bytes(frame[2:4], "big")
        api = BY_KEY[int.from_bytes(frame[:2], "big")].name
        log.exception("request failed", api=api, version=version)
        self.close()

    def _write(self, data: bytes) -> None:
        if self._batching:
            self._out.append(data)
        elif self.transport is not None:
            self.transport.write(data)

    def _flush(self) -> None:
        if self._out and self.transport is not None:
            out, self._out = self._out, []
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _process(self, frame: bytes) -> None:
        action = self.protocol.receive(frame)
        if isinstance(action, Request):
            self._dispatch(action)
        elif isinstance(action, RawSaslToken):
            self._raw_sasl_token(action.token)
        elif isinstance(action, SendNow):
            self._write(action.data)
        else:
            self._refuse(action.reason)

    def _forward(self, frame: bytes) -> None:
        assert self.upstream is not None and self.route is not None
        try:
            answer = self.upstream.forward(frame, self.route, self.ctx)
        except Exception as exc:
            log.info("closing connection", peer=self.ctx.client_host, reason=str(exc))
            self.close()
            return
        if answer is not None:
            self._forwarded.append(answer)
            answer.add_done_callback(self._forward_done, context=self._callback_context)

    def _forward_done(self, _fut: asyncio.Future[bytes]) -> None:
        forwarded = self._forwarded
        while forwarded and forwarded[0].done() and not self.closed:
            answer = forwarded.popleft()
            if answer.cancelled() or answer.exception() is not None:
                log.info("closing connection", peer=self.ctx.client_host, reason="forward failed")
                self.close()
                return
            self._write(answer.result())
            self.last_activity = self.runtime.loop.time()
        if self.closed:
            forwarded.clear()
        elif self.queue and not self.busy and not self._drain_scheduled:
            self._drain()

    def _dispatch(self, request: Request) -> None:
        try:
            reply = self.runtime.handle(request, self.ctx)
        except CloseConnection as why:
            log.info("closing connection", peer=self.ctx.client_host, reason=str(why))
            self.close()
            return
        except Exception:
            log.exception("request failed", api=request.api.name, version=request.version)
            self.close()
            return
        if request.api.key == OFFSET_COMMIT_KEY and (
            self._commits or not isinstance(reply, Struct)
        ):
            self._commit_waits(request, reply)
        elif isinstance(reply, Struct):
            self._send(request.api, request.version, request.header.correlation_id, reply)
        else:
            # At most one reply is parked per connection (it blocks the connection, as in
            # Kafka), so the request waits here, and the callback's context is made once
            # per connection: a rebalance parks a reply on every member's connection.
            # Only what the response's envelope needs waits, not the decoded request.
            self.busy = True
            self._parked = (request.api, request.version, request.header.correlation_id)
            self._parked_reply = reply
            reply.add_done_callback(self._deferred_done, context=self._callback_context)
            if self.queue:  # already something behind it
                self.runtime.next_request_behind(reply)

    def _commit_waits(self, request: Request, reply: Struct | asyncio.Future[Any]) -> None:
        # A commit's answer waits for its write only: the commits behind it are taken
        # meanwhile (a turn's go to the store together) and answered in order (one
        # answered at once behind them too); any other request waits until they are
        # answered, as behind any parked reply.
        if isinstance(reply, Struct):
            answered: asyncio.Future[Any] = self.runtime.loop.create_future()
            answered.set_result(reply)
            reply = answered
        header = request.header
        self._commits.append((request.api, request.version, header.correlation_id, reply))
        reply.add_done_callback(self._commits_done, context=self._callback_context)

    def _commit_taken(self, taken: LaneCommit, stored: asyncio.Future[bool]) -> None:
        # Answered once its turn's records are stored, in order with the commits before it.
        self._commits.append((taken, stored))
        if stored is not self._lane_stored:
            self._lane_stored = stored
            stored.add_done_callback(self._commits_done, context=self._callback_context)

    def _commits_done(self, _fut: asyncio.Future[Any]) -> None:
        commits = self._commits
        self._batching = True  # the answers ready go out in one write
        try:
            while commits and commits[0][-1].done() and not self.closed:
                entry = commits.popleft()
                if len(entry) == 2:  # the commit lane's: stored or not, its answer is ready
                    taken, stored = entry
                    self._out.append(taken.ok if stored.result() else taken.failed)
                    self.last_activity = self.runtime.loop.time()
                    continue
                api, version, correlation_id, fut = entry
                if fut.cancelled() or fut.exception() is not None:
                    failure = "cancelled" if fut.cancelled() else repr(fut.exception())
                    log.error("deferred reply failed", api=api.name, error=failure)
                    self.close()
                    break
                self._send(api, version, correlation_id, fut.result())
        finally:
            self._batching = False
            self._flush()
        if self.closed:
            commits.clear()
        elif self.queue and not self.busy and not self._drain_scheduled:
            self._drain()

    def _deferred_done(self, fut: asyncio.Future[Any]) -> None:
        self.busy = False
        parked, self._parked = self._parked, None
        self._parked_reply = None
        if self.closed or fut.cancelled() or parked is None:
            return
        api, version, correlation_id = parked
        try:
            body = fut.result()
        except Exception:
            log.exception("deferred reply failed", api=api.name)
            self.close()
            return
        self._send(api, version, correlation_id, body)
        if not self._drain_scheduled:
            self._drain()

    def _send(self, api: Api, version: int, correlation_id: int, body: Struct) -> None:
        if self.closed or self.transport is None:
            return
        try:
            data = response_frame(api, version, correlation_id, body)
        except Exception:
            log.exception("response encoding failed", api=api.name)
            self.close()
            return
        self._write(data)
        self.last_activity = self.runtime.loop.time()
        if self.ctx.close_after_reply:
            self._close_after_grace()

    def _close_after_grace(self) -> None:
        # A refused login: the client reads its error before the connection goes (some
        # clients report only "disconnected" when the close arrives with the response).
        self.closed = True
        self.queue.clear()
        transport = self.transport
        if transport is not None:
            transport.pause_reading()
            self.runtime.loop.call_later(CLOSE_GRACE_S, transport.close)

    def _raw_sasl_token(self, token: bytes) -> None:
        # After a v0 SaslHandshake: bare length-prefixed SASL tokens, no Kafka headers.
        answer = self.runtime.raw_sasl_token(self.ctx, token)
        if isinstance(answer, asyncio.Future):
            self.busy = True
            answer.add_done_callback(self._raw_sasl_answered)
        else:
            self._raw_sasl_answer(answer)

    def _raw_sasl_answered(self, fut: asyncio.Future[Any]) -> None:
        self.busy = False
        if self.closed or fut.cancelled():
            return
        self._raw_sasl_answer(None if fut.exception() is not None else fut.result())
        if not self._drain_scheduled:
            self._drain()

    def _raw_sasl_answer(self, answer: bytes | None) -> None:
        if answer is None or self.transport is None:
            self.close()  # the v0 framing has no way to carry an error
            return
        self._write(self.protocol.raw_response(answer))  # after earlier responses, in order

    def _refuse(self, reason: str) -> None:
        log.info("closing connection", peer=self.ctx.client_host, reason=reason)
        self.close()

    def cool(self) -> None:
        """Hand a hot connection's reads back to its transport (``hot_reads.py``)."""
        hot, self.hot = self.hot, None
        if hot is None:
            return
        hot.stop()
        if not self.closed and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def close(self) -> None:
        self.closed = True
        self.cool()
        self.queue.clear()
        self._flush()  # responses to earlier requests still go out; close() sends them
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection now, discarding unsent responses."""
        self.closed = True
        self.cool()
        self.queue.clear()
        self._out.clear()
        if self.transport is not None:
            self.transport.abort()


class Server:
    """Owns the listening sockets, the runtime and every connection."""

    def __init__(
        self,
        settings: Settings,
        clock: LoopClock | None = None,
        coordinator: Coordinator = GroupCoordinator,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._coordinator = coordinator
        self.connections: set[KafkaConnection] = set()
        self.guard = ConnectionGuard(settings.limits)
        self._sweeper: asyncio.TimerHandle | None = None
        self.runtime: Runtime | None = None
        self.observability: Observability | None = None
        self._server: asyncio.base_events.Server | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self.listeners: list[Listener] = list(settings.effective_listeners)
        self.stopped = asyncio.Event()
        self._on_empty: asyncio.Future[None] | None = None
        self.cluster: ClusterMembership | None = None
        self.console: Console | None = None
        self.upstream: Upstream | None = None
        self.lag: LagReader | None = None
        #: Per upstream broker (--upstream): the daemon's listening sockets forwarding to it.
        self._broker_servers: list[asyncio.base_events.Server] = []
        self._brokers_bound = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.runtime = Runtime(
            self.settings, loop, open_store(self.settings), self._clock, self._coordinator
        )
        self.observability = Observability(
            self.settings.observability,
            self.settings.node_id,
            self.runtime,
            lambda: len(self.connections),
        )
        if self.observability.metrics is not None:
            self.guard.on_hit = self.observability.metrics.limit_hit
        if self.settings.console.listen is not None:
            from ..console.app import Console  # aiohttp and Jinja2 only when it is on

            self.console = Console(
                self.settings.console, self.runtime, lambda: len(self.connections)
            )
        log.info("store", **store_description(self.settings))
        # Everything is reloaded before the first connection is accepted.
        await self.runtime.load()
        for index, listener in enumerate(self.listeners):
            await self._bind(loop, index, listener)
        self._server = self._servers[0]
        first = self.listeners[0]
        if not self.settings.listeners and self.settings.listen[1] == 0:
            # Bound to an ephemeral port: advertise the one we got.
            self.settings = dataclasses.replace(
                self.settings,
                listen=(first.host, first.port),
                advertised_listener=first.advertised_address,
            )
            self.runtime.settings = self.settings
        if isinstance(self.runtime.store, PostgresStore):
            self.cluster = ClusterMembership(self.runtime, self.runtime.store)
        if self.console is not None:
            await self.console.start()  # a port in use stops the start before any client
        if self.settings.upstream is not None:
            self.upstream = Upstream(self.settings, self.runtime.node, self._bind_broker)
            await self.upstream.start()  # bounded: an upstream that is down does not stop it
            self.lag = LagReader(self.upstream, self.runtime.node)
            self.lag.start()
            if self.observability.metrics is not None:
                self.observability.metrics.registry.register(LagGauges(self.runtime.node))
        if self.cluster is not None:
            # A cluster node: its share of the coordinator partitions is taken and loaded
            # before the first client is accepted; its row names its console for the others.
            self.cluster.console_url = self.console.url if self.console is not None else None
            await self.cluster.start()
        for server in self._servers:
            await server.start_serving()
        self._schedule_sweep()
        if (
            not len(self.runtime.catalog)
            and not self.settings.auto_create_topics
            and self.upstream is None
        ):
            log.warning(
                "serving no topics",
                hint="consumers will join their groups but get no partitions: add"
                " --topic NAME:PARTITIONS or --auto-create-topics",
            )
        for listener in self.listeners:
            log.info(
                "listening",
                listener=listener.name,
                listen=f"{listener.host}:{listener.port}",
                advertised="{}:{}".format(*listener.advertised_address),
                node_id=self.settings.node_id,
                topics=len(self.runtime.catalog),
            )

    async def _bind(self, loop: asyncio.AbstractEventLoop, index: int, listener: Listener) -> None:
        tls = None
        if listener.protocol.uses_tls:
            try:
                tls = server_context(self.settings.security, sasl=listener.protocol.uses_sasl)
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise StartupError(f"listener {listener}: cannot load TLS: {exc}") from None
        try:
            server = await self._create_server(loop, index, listener, tls)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise StartupError(
                f"cannot listen on {listener.host}:{listener.port}: {reason}"
            ) from None
        self._servers.append(server)
        if listener.port == 0:
            # Bound to an ephemeral port: advertise the one we got (unless told otherwise).
            port = int(server.sockets[0].getsockname()[1])
            self.listeners[index] = dataclasses.replace(listener, port=port)

    async def _create_server(
        self,
        loop: asyncio.AbstractEventLoop,
        index: int,
        listener: Listener,
        tls: ssl.SSLContext | None,
        broker: int | None = None,
        port: int | None = None,
    ) -> asyncio.base_events.Server:
        """A listener's socket; with ``broker``, one forwarding to that upstream broker
        (serving at once: the node is ready by then)."""
        return await loop.create_server(
            # Looked up when a client connects: the port is only known once bound.
            lambda: KafkaConnection(
                self.runtime,  # type: ignore[arg-type]
                self.connections,
                self.guard,
                self.listeners[index],
                on_lost=self._connection_gone,
                upstream=self.upstream,
                broker=broker,
            ),
            listener.host,
            listener.port if port is None else port,
            reuse_address=True,
            backlog=4096,
            ssl=tls,
            # The node's own listeners serve once it is ready (a cluster node: its partitions).
            start_serving=broker is not None,
            # A TLS handshake is bounded like a request: a stalled one must not hold a socket.
            ssl_handshake_timeout=(
                self.settings.limits.request_receive_timeout_ms / 1000 if tls else None
            ),
        )

    async def _bind_broker(self, broker: int) -> dict[str, tuple[str, int]]:
        """The daemon's address for upstream broker ``broker`` on each listener (a port of
        ``--upstream-broker-ports`` or an ephemeral one, on the listener's host, with its
        security): what Metadata gives clients for that broker (docs/upstream.md)."""
        loop = asyncio.get_running_loop()
        addresses = {}
        assert self.settings.upstream is not None
        base = self.settings.upstream.broker_port_base
        found = self._brokers_bound
        self._brokers_bound += 1
        for index, listener in enumerate(self.listeners):
            port = base + found * len(self.listeners) + index if base else 0
            tls = None
            if listener.protocol.uses_tls:
                tls = server_context(self.settings.security, sasl=listener.protocol.uses_sasl)
            server = await self._create_server(loop, index, listener, tls, broker, port)
            self._broker_servers.append(server)
            port = int(server.sockets[0].getsockname()[1])
            addresses[listener.name] = (listener.advertised_address[0], port)
            log.info("forwarding", listener=listener.name, upstream_broker=broker, port=port)
        return addresses

    def _schedule_sweep(self) -> None:
        loop = asyncio.get_running_loop()
        lim = self.settings.limits
        # Often enough that no timeout overshoots by more than a tenth (or a second).
        shortest = min(
            lim.connections_max_idle_ms, lim.request_receive_timeout_ms, lim.slow_reader_timeout_ms
        )
        interval = min(1.0, max(0.01, shortest / 10000))

        def sweep() -> None:
            for conn in self.connections:
                if conn.hot is not None:
                    conn.hot.settle()  # its idle clock, as of its last read
            self.guard.sweep(self.connections, loop.time())
            self._sweeper = loop.call_later(interval, sweep)

        self._sweeper = loop.call_later(interval, sweep)

    async def _connections_closed(self, timeout_s: float) -> None:
        """Until every connection has flushed and closed (a client that does not read may
        hold it: not longer than ``timeout_s``)."""
        if not self.connections:
            return
        closed = asyncio.get_running_loop().create_future()
        self._on_empty = closed
        try:
            await asyncio.wait_for(closed, timeout_s)
        except TimeoutError:
            for conn in list(self.connections):
                conn.abort()

    def _connection_gone(self) -> None:
        if not self.connections and self._on_empty is not None and not self._on_empty.done():
            self._on_empty.set_result(None)

    @property
    def port(self) -> int:
        """The first listener's port."""
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def port_of(self, protocol: str) -> int:
        return next(lst.port for lst in self.listeners if lst.name == protocol)

    async def stop(self) -> None:
        """Graceful: stop accepting, answer parked requests, flush, close connections."""
        if self._server is None:
            return
        for server in (*self._servers, *self._broker_servers):
            server.close()
        if self.lag is not None:
            await self.lag.close()
        if self.upstream is not None:
            await self.upstream.close()
        if self.console is not None:
            await self.console.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self.cluster is not None:
            await self.cluster.stop()  # hand the partitions over before anything else
        if self.runtime is not None:
            self.runtime.shutdown()
        await asyncio.sleep(0)  # let deferred replies run their callbacks and write
        for conn in list(self.connections):
            conn.cool()
            if conn.transport is not None:
                conn.transport.close()  # close() flushes what is buffered
        await self._connections_closed(SHUTDOWN_FLUSH_S)
        if self.runtime is not None:
            await self.runtime.close_store()
        if self.observability is not None:
            self.observability.close()
        log.info("stopped")
        self.stopped.set()


def open_store(settings: Settings) -> Store:
    if settings.store == "memory":
        return MemoryStore()
    if settings.store == "postgres":
        if not settings.database_url:
            raise StartupError("--store postgres needs --database-url postgresql://...")
        return PostgresStore(
            settings.database_url,
            settings.offsets_topic_num_partitions,
            clustered=True,
            lease_timeout_ms=settings.lease_timeout_ms,
        )
    return SqliteStore(settings.data_dir)


def store_description(settings: Settings) -> dict[str, str]:
    """The start-up line's words for where state is kept (never a password)."""
    if settings.store == "memory":
        return {"store": "memory", "durable": "no: nothing survives a restart"}
    if settings.store == "postgres":
        return {"store": "postgres", "database": safe_url(settings.database_url or "")}
    return {"store": "sqlite", "data_dir": str(settings.data_dir.resolve())}


async def serve(settings: Settings) -> None:
    server = Server(settings)
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
