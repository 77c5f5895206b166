"""The broker: routes decoded requests to handlers and carries out the state machine's effects.

Everything here runs on the one event loop, so all group work is serialised. The sans-IO
``GroupCoordinator`` answers through tokens (``Pending``): a request it can answer at once
gets its reply in the same ``Effects``; a parked JoinGroup/SyncGroup gets it later, when
another request or a timer completes the phase.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsResponseApiVersion
from protocol.errors import ErrorCode
from protocol.frames import Request

from .catalog import Catalog, Topic
from .config import Settings
from .group.coordinator import GroupCoordinator
from .group.effects import Cancel, Effects, Schedule
from .group.events import LimitReached
from .handlers import cluster, groups
from .handlers.reply import Deferred, Pending, Reply
from .persist import to_records, to_write
from .security import handlers as sasl
from .security.config import ANONYMOUS, Listener
from .security.runtime import Security
from .security.sasl import SaslSession
from .store import MemoryStore, Store, Write
from .timers import KeyedTimers

if TYPE_CHECKING:
    from .metrics import Metrics

log = structlog.get_logger("coordinator")

Handler = Callable[["Broker", Request, "ConnectionContext"], Reply]

#: What the daemon implements, by API key. ApiVersions advertises exactly these.
HANDLERS: dict[int, Handler] = {
    18: cluster.api_versions,
    3: cluster.metadata,
    10: cluster.find_coordinator,
    19: cluster.create_topics,
    2: cluster.list_offsets,
    1: cluster.fetch,
    11: groups.join_group,
    14: groups.sync_group,
    12: groups.heartbeat,
    13: groups.leave_group,
    8: groups.offset_commit,
    9: groups.offset_fetch,
    15: groups.describe_groups,
    16: groups.list_groups,
    42: groups.delete_groups,
    47: groups.offset_delete,
    17: sasl.sasl_handshake,
    36: sasl.sasl_authenticate,
}


@dataclass(slots=True)
class ConnectionContext:
    client_host: str  # as Kafka reports it: "/127.0.0.1"
    client_id: str = ""
    listener: Listener | None = None  # None: the default PLAINTEXT listener (tests)
    principal: str = ANONYMOUS
    authenticated: bool = True  # False on a SASL listener until SaslAuthenticate succeeds
    sasl: SaslSession | None = None
    sasl_raw_tokens: bool = False  # after a v0 SaslHandshake
    close_after_reply: bool = False


class Broker:
    def __init__(
        self, settings: Settings, loop: asyncio.AbstractEventLoop, store: Store | None = None
    ) -> None:
        self.settings = settings
        self.loop = loop
        self.store: Store = store if store is not None else MemoryStore()
        self.catalog = Catalog()
        self.groups = GroupCoordinator(settings.group)
        self.security = Security(settings.security)
        # The state machine's clock: the loop's monotonic clock, anchored to the wall clock
        # at start, so persisted timestamps (heartbeats, commits, Empty since) mean the same
        # thing after a restart.
        self._clock_offset_ms = time.time() * 1000 - loop.time() * 1000
        self.timers = KeyedTimers(loop, self._on_timer, self._clock_offset_ms)
        self.closing = False
        # Where group events go besides the log (the journal, metrics): see observability.py.
        self.event_sinks: list[Callable[[object], None]] = []
        self.metrics: Metrics | None = None
        self._delayed: dict[asyncio.Future[Any], tuple[asyncio.TimerHandle, Any]] = {}
        # The next run of each periodic job, by job: a re-armed job replaces its handle, so
        # nothing accumulates however long the daemon runs.
        self._periodic: dict[str, asyncio.TimerHandle] = {}
        self._checkpointed: dict[tuple[str, str], int] = {}
        self._api_versions = [
            ApiVersionsResponseApiVersion(
                api_key=key,
                min_version=BY_KEY[key].min_version,
                max_version=BY_KEY[key].max_version,
            )
            for key in sorted(HANDLERS)
        ]

    async def load(self) -> None:
        """Open the store and rebuild topics, groups and offsets; before any request."""
        state = await self.store.open()
        self.security.load(state.security)
        for name, partitions in state.topics:
            self.catalog.create(name, partitions)
        configured = [(n, p) for n, p in self.settings.topics if self.catalog.get(n) is None]
        for name, partitions in configured:
            self.catalog.create(name, partitions)
        if configured:
            await self.store.write(Write(topics=configured))
        records = to_records(state)
        self.apply(self.groups.load(records, self.now_ms()))
        self._checkpointed = {
            (g.group_id, m.member_id): m.last_heartbeat_ms
            for g in self.groups.groups.values()
            for m in g.members.values()
        }
        log.info(
            "loaded",
            groups=len(self.groups.groups),
            offsets=len(state.offsets),
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

    def now_ms(self) -> int:
        return int(self.loop.time() * 1000 + self._clock_offset_ms)

    def supports(self, api_key: int) -> bool:
        return api_key in HANDLERS

    def handle(self, request: Request, ctx: ConnectionContext) -> Reply:
        metrics = self.metrics
        if metrics is None:
            return HANDLERS[request.api.key](self, request, ctx)
        started = time.perf_counter()
        reply = HANDLERS[request.api.key](self, request, ctx)
        return metrics.request_done(request, reply, started)

    def advertised_for(self, ctx: ConnectionContext) -> tuple[str, int]:
        """The address of the listener the client connected on (Kafka answers each
        listener with its own advertised address)."""
        return ctx.listener.advertised_address if ctx.listener else self.settings.advertised

    def advertised_api_versions(self) -> list[ApiVersionsResponseApiVersion]:
        return self._api_versions

    def call(
        self, invoke: Callable[[Pending, int], Effects], render: Callable[[Any], Any]
    ) -> Reply:
        """Run a state-machine request; answer now if it was answered, else defer."""
        token = Pending()
        self.apply(invoke(token, self.now_ms()))
        if token.answered:
            return render(token.result)  # type: ignore[no-any-return]
        token.future = self.loop.create_future()
        return Deferred(token.future, render)

    # -- effects ---------------------------------------------------------------------------

    def apply(self, effects: Effects) -> asyncio.Future[None] | None:
        """Carry out ``effects``. With records, the replies wait until the records are
        durable; the returned future says when (None: nothing to persist)."""
        for change in effects.timers:
            if isinstance(change, Schedule):
                self.timers.schedule(change.key, change.deadline_ms)
            elif isinstance(change, Cancel):
                self.timers.cancel(change.key)
        for event in effects.events:
            self.emit(event)
        if not effects.records:
            _resolve_all(effects.replies)
            return None
        durable = self.store.write(to_write(effects.records) if self.store.persistent else Write())
        replies = effects.replies
        durable.add_done_callback(lambda fut: _after_write(fut, replies))
        return durable

    def _on_timer(self, key: str) -> None:
        self.apply(self.groups.fire_timer(key, self.now_ms()))

    def emit(self, event: object) -> None:
        """Log ``event`` and hand it to the journal and metrics, if they are on."""
        self._log_event(event)
        for sink in self.event_sinks:
            sink(event)

    def _log_event(self, event: object) -> None:
        fields = dataclasses.asdict(event) if dataclasses.is_dataclass(event) else {}  # type: ignore[arg-type]
        emit = log.warning if isinstance(event, LimitReached) else log.info
        emit(type(event).__name__, **{k: v for k, v in fields.items() if _loggable(v)})

    # -- topics ----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int) -> tuple[Topic, asyncio.Future[None]]:
        """Create a virtual topic; the future says when it is durable."""
        topic = self.catalog.create(name, partitions)
        log.info("TopicCreated", topic=name, partitions=partitions)
        durable = self.store.write(Write(topics=[(name, partitions)]))
        durable.add_done_callback(lambda fut: _after_write(fut, []))
        return topic, durable

    def when_durable(self, durable: asyncio.Future[None] | None, response: Any) -> Reply:
        """``response`` now if nothing was written, else once the write is durable."""
        if durable is None:
            return response  # type: ignore[no-any-return]
        return Deferred(durable, lambda _: response)

    def catalog_has_room(self, partitions: int, error: ErrorCode) -> bool:
        """Whether a topic of ``partitions`` fits the catalog's limits; if not, the hit
        (answered with ``error``) is logged and counted."""
        if len(self.catalog) >= self.settings.max_topics:
            limit, value = "max_topics", self.settings.max_topics
        elif (
            sum(t.partitions for t in self.catalog.all()) + partitions
            > self.settings.max_partitions
        ):
            limit, value = "max_partitions", self.settings.max_partitions
        else:
            return True
        self.emit(LimitReached(None, limit, value, error.name))
        return False

    def auto_create_topic(self, name: str) -> Topic | None:
        if not self.settings.auto_create_topics:
            return None
        if not self.catalog_has_room(
            self.settings.num_partitions, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ):
            return None
        from .catalog import valid_topic_name

        if not valid_topic_name(name):
            return None
        topic, _durable = self.create_topic(name, self.settings.num_partitions)
        return topic

    # -- delayed responses (Fetch long polls) ---------------------------------------------

    def track_delayed(
        self, future: asyncio.Future[Any], handle: asyncio.TimerHandle, value: Any
    ) -> None:
        self._delayed[future] = (handle, value)
        future.add_done_callback(self._delayed.pop)

    # -- shutdown --------------------------------------------------------------------------

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
        seen: dict[tuple[str, str], int] = {}
        moved: list[tuple[str, str, int]] = []
        previous = self._checkpointed
        for g in self.groups.groups.values():
            for m in g.members.values():
                key = (g.group_id, m.member_id)
                seen[key] = m.last_heartbeat_ms
                if previous.get(key) != m.last_heartbeat_ms:
                    moved.append((g.group_id, m.member_id, m.last_heartbeat_ms))
        self._checkpointed = seen
        if not moved:
            return None
        durable = self.store.write(Write(heartbeats=moved))
        durable.add_done_callback(lambda fut: _after_write(fut, []))
        return durable

    # -- shutdown --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Answer everything that is parked (Kafka answers NOT_COORDINATOR on unload)."""
        self.closing = True
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

    async def close_store(self) -> None:
        await self.store.close()


def _resolve_all(replies: list[tuple[object, object]]) -> None:
    for token, result in replies:
        if isinstance(token, Pending):
            token.resolve(result)


def _after_write(fut: asyncio.Future[None], replies: list[tuple[object, object]]) -> None:
    exc = None if fut.cancelled() else fut.exception()
    if exc is None:
        _resolve_all(replies)
        return
    # The client is not told "committed" for what is not durable; its connection closes.
    log.error("store write failed", error=repr(exc))
    for token, _result in replies:
        if isinstance(token, Pending):
            token.fail(exc)


def _loggable(value: Any) -> bool:
    # Member assignments (SyncCompleted) are for the journal, which decodes them.
    return not isinstance(value, bytes | bytearray | tuple)
