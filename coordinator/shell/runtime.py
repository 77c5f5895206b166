"""The runtime: carries out what handlers and the state machine ask for, on the event loop.

Handlers and the group state machine are sans-IO; this is where their ``Outcome`` and
``Effects`` meet the loop: timers are armed, records are written (replies wait until they
are durable), long polls wait, password checks run in a thread, events go to the log,
journal and metrics. Everything runs on the one event loop, so all group work is
serialised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from protocol.apis import BY_KEY, Api
from protocol.errors import ErrorCode
from protocol.frames import Request
from protocol.schema import Struct

from ..cluster.events import LeaseRenewed, PartitionsFenced
from ..fastlane.batch import heartbeat_batch
from ..group.coordinator import GroupCoordinator
from ..group.effects import Effects
from ..group.events import GroupConfigCapped, LimitReached, OffsetsCommitted
from ..group.records import OffsetCommitRecord, Record
from ..handlers.connection_context import ConnectionContext
from ..handlers.consumer_heartbeat_lane import CONSUMER_GROUP_HEARTBEAT_KEY, ConsumerHeartbeatLane
from ..handlers.dispatcher import Dispatcher
from ..handlers.heartbeat_lane import HEARTBEAT_KEY, HeartbeatLane
from ..handlers.metadata_lane import METADATA_KEY, MetadataLane
from ..handlers.node import Coordinator, Node
from ..handlers.offset_commit_lane import LaneCommit, OffsetCommitLane
from ..handlers.offsets import OFFSET_COMMIT_KEY
from ..handlers.outcome import Awaiting, Delayed, Offloaded, Outcome, Pending
from ..handlers.routes import daemon_dispatcher
from ..security import handlers as sasl
from ..security.runtime import Security
from ..settings.config import Settings
from ..shared.catalog import Catalog
from ..shared.clock import LoopClock
from ..shared.errors import StartupError
from ..shared.events import NodeEvent
from ..store import MemoryStore, Store, Write
from .driver import Batch, EffectsDriver
from .timers import KeyedTimers

if TYPE_CHECKING:
    from ..telemetry.metrics import Metrics

log = structlog.get_logger("coordinator")

R = TypeVar("R")

#: How a request whose write failed is answered: Kafka maps a failed append to the log
#: (KAFKA_STORAGE_ERROR) to NOT_COORDINATOR, which clients retry after rediscovery.
STORE_FAILED = ErrorCode.NOT_COORDINATOR


#: The APIs the heartbeat lanes answer, as their requests are counted.
_HEARTBEAT_API = BY_KEY[HEARTBEAT_KEY]
_CONSUMER_HEARTBEAT_API = BY_KEY[CONSUMER_GROUP_HEARTBEAT_KEY]
_METADATA_API = BY_KEY[METADATA_KEY]
_OFFSET_COMMIT_API = BY_KEY[OFFSET_COMMIT_KEY]


class Runtime:
    def __init__(
        self,
        settings: Settings,
        loop: asyncio.AbstractEventLoop,
        store: Store | None = None,
        clock: LoopClock | None = None,
        coordinator: Coordinator = GroupCoordinator,
    ) -> None:
        self.loop = loop
        self.clock = clock if clock is not None else LoopClock(loop)
        self.node = Node(settings, self.clock, coordinator)
        self.dispatcher: Dispatcher = daemon_dispatcher(self.node)
        self.heartbeat_lane = (
            HeartbeatLane(self.node) if self.dispatcher.supports(HEARTBEAT_KEY) else None
        )
        self.consumer_heartbeat_lane = (
            ConsumerHeartbeatLane(self.node)
            if self.dispatcher.supports(CONSUMER_GROUP_HEARTBEAT_KEY)
            else None
        )
        # A read's leading heartbeats answered in C (None: not built, or forced pure).
        self.heartbeat_batch = heartbeat_batch(
            self.node, self.heartbeat_lane, self.consumer_heartbeat_lane
        )
        self.metadata_lane = (
            MetadataLane(self.node) if self.dispatcher.supports(METADATA_KEY) else None
        )
        self.commit_lane = (
            OffsetCommitLane(self.node) if self.dispatcher.supports(OFFSET_COMMIT_KEY) else None
        )
        #: The commit lane's commits of this loop turn, written together (``answer_commit``).
        self._lane_batch: _LaneBatch | None = None
        self.store: Store = store if store is not None else MemoryStore()
        self.timers = KeyedTimers(loop, self._on_timer, self.clock.offset_ms)
        self.driver: EffectsDriver[Pending, asyncio.Future[None]] = EffectsDriver(
            self.node.groups,
            timers=self.timers,
            write=self._write,
            emit=self.emit,
            answer=Pending.resolve,
            fail=Pending.fail,
            now_ms=self.clock.now_ms,
        )
        # Where group events go besides the log (the journal, metrics): see observability.py.
        self.event_sinks: list[Callable[[NodeEvent], None]] = []
        self.metrics: Metrics | None = None
        self._delayed: dict[asyncio.Future[Any], tuple[asyncio.TimerHandle, Any]] = {}
        self._until_next_request: set[asyncio.Future[Any]] = set()
        # The next run of each periodic job, by job: a re-armed job replaces its handle, so
        # nothing accumulates however long the daemon runs.
        self._periodic: dict[str, asyncio.TimerHandle] = {}
        # Whether the last write failed: a failing disk is logged once, not per request.
        self._store_failing = False

    # The node's state, as the server, observability and tests see it.
    @property
    def settings(self) -> Settings:
        return self.node.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.node.settings = settings

    @property
    def catalog(self) -> Catalog:
        return self.node.catalog

    @property
    def groups(self) -> GroupCoordinator[Pending]:
        return self.node.groups

    @property
    def security(self) -> Security:
        return self.node.security

    @property
    def closing(self) -> bool:
        return self.node.closing

    def now_ms(self) -> int:
        return self.clock.now_ms()

    async def load(self) -> None:
        """Open the store and rebuild topics, groups and offsets; before any request."""
        state = await self.store.open()
        self.security.load(state.security)
        self.catalog.use_id_key(state.topic_id_key, state.unkeyed_topics)
        for name, partitions in state.topics:
            self.catalog.create(name, partitions)
        configured = []
        for name, partitions in self.settings.topics:
            stored = self.catalog.get(name)
            if stored is None:
                self.catalog.create(name, partitions)
            elif partitions > stored.partitions:
                self.catalog.grow(name, partitions)  # as Kafka adds partitions
                log.info("topic grown", topic=name, before=stored.partitions, now=partitions)
            elif partitions < stored.partitions:
                raise StartupError(
                    f"--topic {name}:{partitions}: the stored topic has {stored.partitions}"
                    " partitions, and partitions cannot be removed (as in Kafka); give"
                    f" --topic {name}:{stored.partitions} or more"
                )
            else:
                continue
            configured.append((name, partitions))
        if configured:
            await self.store.write(Write(topics=configured))
        self.apply(self.groups.load(state.records, self.now_ms()))
        log.info(
            "loaded",
            groups=len(self.groups.groups),
            offsets=sum(isinstance(r, OffsetCommitRecord) for r in state.records),
            topics=len(self.catalog),
        )
        self._every(
            "expire_offsets",
            self.settings.offsets_retention_check_interval_ms,
            self.expire_offsets,
        )
        self._every(
            "checkpoint_heartbeats",
            self.settings.heartbeat_checkpoint_interval_ms,
            self.checkpoint_heartbeats,
        )
        self._every(
            "refresh_security",
            self.settings.security.refresh_interval_ms,
            lambda: self.security.start_refresh(self.loop, self.store),
        )

    # -- requests ------------------------------------------------------------------------

    def handle(self, request: Request, conn: ConnectionContext) -> Struct | asyncio.Future[Any]:
        """The response body to ``request``, or a future of it (a reply that waits)."""
        metrics = self.metrics
        if metrics is None:
            return self.carry_out(self.dispatcher.dispatch(request, conn))
        started = time.perf_counter()
        series = metrics.request_received(request.api, request.version)
        reply = self.carry_out(self.dispatcher.dispatch(request, conn))
        if isinstance(reply, asyncio.Future):
            reply.add_done_callback(
                lambda fut: (
                    None
                    if fut.cancelled() or fut.exception() is not None
                    else metrics.request_answered(series, fut.result(), started)
                )
            )
        else:
            metrics.request_answered(series, reply, started)
        return reply

    def answer_heartbeat(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> bytes | None:
        """The response frame to a Heartbeat request frame, through the heartbeat lane
        (``handlers/heartbeat_lane.py``); None: ``handle`` must take it."""
        return self._through_lane(self.heartbeat_lane, _HEARTBEAT_API, frame, conn, now_ms)

    def answer_consumer_heartbeat(
        self, frame: bytes, conn: ConnectionContext, now_ms: int
    ) -> bytes | None:
        """The response frame to a steady ConsumerGroupHeartbeat frame, through the
        consumer heartbeat lane (``handlers/consumer_heartbeat_lane.py``); None: ``handle``
        must take it."""
        lane = self.consumer_heartbeat_lane
        return self._through_lane(lane, _CONSUMER_HEARTBEAT_API, frame, conn, now_ms)

    def answer_metadata(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> bytes | None:
        """The response frame to a Metadata request frame, through the Metadata lane
        (``handlers/metadata_lane.py``): remembered, or made by ``handle`` and remembered;
        None: the server's general path must take it."""
        lane = self.metadata_lane
        if lane is None:
            return None
        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        answer = lane.answer(frame, conn, self.handle)
        if answer is None:
            return None
        data, remembered, version = answer
        if metrics is not None and remembered is not None:  # else ``handle`` counted it
            series = metrics.request_received(_METADATA_API, version)
            metrics.request_answered(series, remembered, started)
        return data

    def answer_commit(
        self, frame: bytes, conn: ConnectionContext, now_ms: int
    ) -> tuple[LaneCommit, asyncio.Future[bool]] | None:
        """An OffsetCommit frame taken by the commit lane (``handlers/offset_commit_lane.py``):
        the commit (its answers) and a future of whether its records were stored, once the
        state machine knows it (then, and only then, may it be answered); None: ``handle``
        must take it. The records of every commit taken in one loop turn go to the store in
        one write (one transaction), after whatever was written before them and before
        anything written after them (``_write`` writes them first)."""
        lane = self.commit_lane
        if lane is None:
            return None
        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        taken = lane.commit(frame, conn, now_ms)
        if taken is None:
            return None
        if taken.key is not None:
            self.timers.schedule(taken.key, taken.deadline)
        batch = self._lane_batch
        if batch is None:
            batch = self._lane_batch = _LaneBatch(self.loop.create_future())
            self.loop.call_soon(self._write_lane)
        batch.records += taken.records
        if metrics is not None:
            series = metrics.request_received(_OFFSET_COMMIT_API, taken.version)
            batch.counted.append((series, started, taken.failed_body))
        return taken, batch.stored

    def _write_lane(self) -> None:
        """Write the commit lane's batch (if any): through the driver, as any records."""
        lane_batch, self._lane_batch = self._lane_batch, None
        if lane_batch is None:
            return
        durable = self._write(Batch(lane_batch.records, []))
        # Called after ``_after_write``'s (callbacks run in the order they were added): the
        # state machine knows the records stored (or not) before any answer goes.
        durable.add_done_callback(lambda fut: self._lane_written(fut, lane_batch))

    def _lane_written(self, fut: asyncio.Future[None], batch: _LaneBatch) -> None:
        ok = not fut.cancelled() and fut.exception() is None
        metrics = self.metrics
        if metrics is not None:
            for series, started, failed in batch.counted:
                if ok:
                    metrics.request_answered_code(series, 0, started)
                else:
                    metrics.request_answered(series, failed, started)
        batch.stored.set_result(ok)

    def _through_lane(
        self,
        lane: HeartbeatLane | ConsumerHeartbeatLane | None,
        api: Api,
        frame: bytes,
        conn: ConnectionContext,
        now_ms: int,
    ) -> bytes | None:
        """A heartbeat lane's answer, and what both lanes leave to the runtime: the session
        timer moved (told only of a new or earlier deadline) and the request counted as the
        dispatcher counts it."""
        if lane is None:
            return None
        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        answer = lane.answer(frame, conn, now_ms)
        if answer is None:
            return None
        data, version, error, key, deadline = answer
        if key is not None:
            self.timers.schedule(key, deadline)
        if metrics is not None:
            series = metrics.request_received(api, version)
            metrics.request_answered_code(series, error, started)
        return data

    def raw_sasl_token(
        self, conn: ConnectionContext, token: bytes
    ) -> bytes | asyncio.Future[Any] | None:
        """The bare answer to a bare SASL token (after a v0 SaslHandshake); None: close."""
        return self.carry_out(sasl.raw_token(self.node, conn, token))

    def carry_out(self, outcome: Outcome[R]) -> R | asyncio.Future[Any]:
        """Carry out ``outcome``: its reply now, or a future of it."""
        durable = None
        if outcome.effects is not None or outcome.topics:
            durable = self.apply(outcome.effects, outcome.topics)
        reply = outcome.reply
        if isinstance(reply, Awaiting):
            return self._awaiting(reply)
        if isinstance(reply, Delayed):
            return self._delayed_reply(reply)
        if isinstance(reply, Offloaded):
            return self._offloaded(reply)
        if durable is None:
            return reply
        answer: asyncio.Future[Any] = self.loop.create_future()
        failed = outcome.failed
        if failed is None:
            durable.add_done_callback(lambda fut: _settle(answer, fut, lambda _: reply))
        else:
            durable.add_done_callback(
                lambda fut: _resolve(
                    answer, reply if fut.exception() is None else failed(STORE_FAILED)
                )
            )
        return answer

    def _awaiting(self, wait: Awaiting[R]) -> R | asyncio.Future[Any]:
        token = wait.token
        if token.answered:  # carrying out the effects answered it, with nothing to write
            return wait.render(token.result)
        answer: asyncio.Future[Any] = self.loop.create_future()
        token.on_answer = _Answered(answer, wait.render, wait.failed)
        return answer

    def _delayed_reply(self, wait: Delayed[R]) -> asyncio.Future[Any]:
        answer: asyncio.Future[Any] = self.loop.create_future()
        handle = self.loop.call_later(wait.delay_ms / 1000, _resolve, answer, wait.body)
        self._delayed[answer] = (handle, wait.body)
        answer.add_done_callback(self._delayed.pop)
        if wait.until_next_request:
            self._until_next_request.add(answer)
            answer.add_done_callback(self._until_next_request.discard)
        return answer

    def next_request_behind(self, answer: asyncio.Future[Any]) -> None:
        """Another request arrived behind the parked ``answer``: a long poll that waits
        for nothing but its time (``Delayed.until_next_request``) is answered now."""
        if answer in self._until_next_request:
            handle, value = self._delayed[answer]
            handle.cancel()
            _resolve(answer, value)

    def _offloaded(self, wait: Offloaded[R, Any]) -> asyncio.Future[Any]:
        answer: asyncio.Future[Any] = self.loop.create_future()
        work = self.loop.run_in_executor(wait.executor, wait.work)

        def done(fut: asyncio.Future[Any]) -> None:
            if answer.done():
                return
            exc = fut.exception()
            if exc is not None:
                answer.set_exception(exc)
                return
            try:
                then = self.carry_out(wait.then(fut.result()))
            except Exception as failed:
                answer.set_exception(failed)
                return
            if isinstance(then, asyncio.Future):
                then.add_done_callback(lambda nxt: _settle(answer, nxt, lambda value: value))
            else:
                answer.set_result(then)

        work.add_done_callback(done)
        return answer

    # -- effects ---------------------------------------------------------------------------

    def apply(
        self, effects: Effects[Pending] | None, topics: Iterable[tuple[str, int]] = ()
    ) -> asyncio.Future[None] | None:
        """Carry out ``effects`` and persist ``topics`` (``driver.py``). With records, the
        replies wait until the records are durable; the returned future says when (None:
        nothing to persist)."""
        return self.driver.apply(effects, topics)

    def _write(self, batch: Batch[Pending]) -> asyncio.Future[None]:
        if self._lane_batch is not None:
            self._write_lane()  # the commit lane's records were made first: written first
        write = Write(batch.records if self.store.persistent else [], batch.topics)
        durable = self.store.write(write)
        durable.add_done_callback(lambda fut: self._after_write(fut, batch))
        return durable

    def _on_timer(self, key: str) -> None:
        self.driver.fire_timer(key)

    def emit(self, event: NodeEvent) -> None:
        """Log ``event`` and hand it to the journal and metrics, if they are on."""
        self._log_event(event)
        for sink in self.event_sinks:
            sink(event)

    def _log_event(self, event: NodeEvent) -> None:
        if isinstance(event, LeaseRenewed):
            return  # once a second: counted in metrics, not logged
        warn = isinstance(event, _WARNING_EVENTS)
        debug = isinstance(event, _DEBUG_EVENTS)
        level = logging.WARNING if warn else logging.DEBUG if debug else logging.INFO
        if not _log_enabled(level):
            return  # below the log level: its fields are not even read (an event per member)
        emit = log.warning if warn else log.debug if debug else log.info
        # Events hold flat values: read as they are (asdict deep-copied every member's
        # assignment of a SyncCompleted, only for them to be left out).
        fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
        emit(type(event).__name__, **{k: v for k, v in fields.items() if _loggable(v)})

    # -- periodic work --------------------------------------------------------------------

    def _every(self, name: str, interval_ms: int, job: Callable[[], object]) -> None:
        if interval_ms <= 0:
            return

        def run() -> None:
            if self.closing:
                return
            job()
            self._periodic[name] = self.loop.call_later(interval_ms / 1000, run)

        self._periodic[name] = self.loop.call_later(interval_ms / 1000, run)

    def expire_offsets(self) -> None:
        retention_ms = self.settings.offsets_retention_minutes * 60_000
        self.apply(self.groups.expire_offsets(self.now_ms(), retention_ms))

    def checkpoint_heartbeats(self) -> asyncio.Future[None] | None:
        """Persist members' last heartbeats that moved since the last checkpoint, so a
        member restored after a crash keeps what was left of its session."""
        if not self.store.persistent:
            return None
        return self.apply(self.groups.checkpoint(self.now_ms()))

    # -- shutdown --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Answer everything that is parked (Kafka answers NOT_COORDINATOR on unload)."""
        self.node.closing = True
        self._write_lane()
        for handle in self._periodic.values():
            handle.cancel()
        self._periodic.clear()
        self.checkpoint_heartbeats()
        self.apply(self.groups.shutdown())
        for future, (handle, value) in list(self._delayed.items()):
            handle.cancel()
            if not future.done():
                future.set_result(value)
        self.timers.cancel_all()
        self.node.regex_resolver.close()

    async def close_store(self) -> None:
        await self.store.close()

    def _after_write(self, fut: asyncio.Future[None], batch: Batch[Pending]) -> None:
        if fut.cancelled():  # never stored: its replies fail, as after a failed write
            self.driver.written(batch, asyncio.CancelledError())
            return
        exc = fut.exception()
        if exc is None:
            if self._store_failing:
                self._store_failing = False
                log.warning("store writes succeed again")
        else:
            # Nothing is reported done that is not durable: each waiting request is
            # answered with its error (or its connection closes when its API has no way to
            # say it).
            if not self._store_failing:
                self._store_failing = True
                log.error("store write failed", error=str(exc) or repr(exc))
            if self.metrics is not None:
                self.metrics.store_write_failures.inc()
        self.driver.written(batch, exc)


class _LaneBatch:
    """The commit lane's commits of one loop turn: their records, the future of whether
    they were stored, and (with metrics) each commit's series, start and failed answer."""

    __slots__ = ("counted", "records", "stored")

    def __init__(self, stored: asyncio.Future[bool]) -> None:
        self.records: list[Record] = []
        self.stored = stored
        self.counted: list[tuple[Any, float, Struct]] = []


class _Answered:
    """Settles the future of a parked reply when the state machine answers its token (one
    object rather than a closure and its cells: a rebalance parks one per member)."""

    __slots__ = ("answer", "failed", "render")

    def __init__(
        self,
        answer: asyncio.Future[Any],
        render: Callable[[Any], Any],
        failed: Callable[[ErrorCode], Any] | None,
    ) -> None:
        self.answer = answer
        self.render = render
        self.failed = failed

    def __call__(self, result: object, exc: BaseException | None) -> None:
        answer = self.answer
        if answer.done():
            return
        if exc is not None:
            if self.failed is None:
                answer.set_exception(exc)
            else:
                answer.set_result(self.failed(STORE_FAILED))
            return
        try:
            answer.set_result(self.render(result))
        except Exception as render_failed:
            answer.set_exception(render_failed)


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _settle(
    answer: asyncio.Future[Any], source: asyncio.Future[Any], value: Callable[[Any], Any]
) -> None:
    """Complete ``answer`` as ``source`` completed, its result mapped through ``value``."""
    if answer.done():
        return
    if source.cancelled():
        answer.cancel()
    elif (exc := source.exception()) is not None:
        answer.set_exception(exc)
    else:
        answer.set_result(value(source.result()))


#: Events logged as warnings; the others at info.
_WARNING_EVENTS = (LimitReached, PartitionsFenced, GroupConfigCapped)
#: Events logged at debug: every consumer commits every few seconds (the journal and the
#: metrics count them).
_DEBUG_EVENTS = (OffsetsCommitted,)


def _log_enabled(level: int) -> bool:
    # ``bind()`` gives the proxy's cached logger (asking the proxy for an attribute goes
    # through its ``__getattr__`` each time); structlog's filtering loggers say their level.
    enabled = getattr(log.bind(), "is_enabled_for", None)
    return enabled is None or bool(enabled(level))


def _loggable(value: Any) -> bool:
    # Member assignments (SyncCompleted) are for the journal, which decodes them.
    return not isinstance(value, bytes | bytearray | tuple)
