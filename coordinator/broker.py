"""The broker: routes decoded requests to handlers and carries out the state machine's effects.

Everything here runs on the one event loop, so all group work is serialised. The sans-IO
``GroupCoordinator`` answers through tokens (``Pending``): a request it can answer at once
gets its reply in the same ``Effects``; a parked JoinGroup/SyncGroup gets it later, when
another request or a timer completes the phase.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsResponseApiVersion
from protocol.frames import Request

from .catalog import Catalog, Topic
from .config import Settings
from .group.coordinator import GroupCoordinator
from .group.effects import Cancel, Effects, Schedule
from .handlers import cluster, groups
from .handlers.reply import Deferred, Pending, Reply
from .timers import KeyedTimers

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
}


@dataclass(slots=True)
class ConnectionContext:
    client_host: str  # as Kafka reports it: "/127.0.0.1"
    client_id: str = ""


class Broker:
    def __init__(self, settings: Settings, loop: asyncio.AbstractEventLoop) -> None:
        self.settings = settings
        self.loop = loop
        self.catalog = Catalog()
        for name, partitions in settings.topics:
            self.catalog.create(name, partitions)
        self.groups = GroupCoordinator(settings.group)
        self.timers = KeyedTimers(loop, self._on_timer)
        self.closing = False
        self._delayed: dict[asyncio.Future[Any], tuple[asyncio.TimerHandle, Any]] = {}
        self._api_versions = [
            ApiVersionsResponseApiVersion(
                api_key=key,
                min_version=BY_KEY[key].min_version,
                max_version=BY_KEY[key].max_version,
            )
            for key in sorted(HANDLERS)
        ]

    # -- requests ------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int(self.loop.time() * 1000)

    def supports(self, api_key: int) -> bool:
        return api_key in HANDLERS

    def handle(self, request: Request, ctx: ConnectionContext) -> Reply:
        return HANDLERS[request.api.key](self, request, ctx)

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

    def apply(self, effects: Effects) -> None:
        for change in effects.timers:
            if isinstance(change, Schedule):
                self.timers.schedule(change.key, change.deadline_ms)
            elif isinstance(change, Cancel):
                self.timers.cancel(change.key)
        for event in effects.events:
            self._log_event(event)
        for token, result in effects.replies:
            if isinstance(token, Pending):
                token.resolve(result)

    def _on_timer(self, key: str) -> None:
        self.apply(self.groups.fire_timer(key, self.now_ms()))

    def _log_event(self, event: object) -> None:
        fields = dataclasses.asdict(event) if dataclasses.is_dataclass(event) else {}  # type: ignore[arg-type]
        log.info(type(event).__name__, **{k: v for k, v in fields.items() if _loggable(v)})

    # -- topics ----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int) -> Topic:
        topic = self.catalog.create(name, partitions)
        log.info("TopicCreated", topic=name, partitions=partitions)
        return topic

    def auto_create_topic(self, name: str) -> Topic | None:
        if not self.settings.auto_create_topics:
            return None
        from .catalog import valid_topic_name

        if not valid_topic_name(name):
            return None
        return self.create_topic(name, self.settings.num_partitions)

    # -- delayed responses (Fetch long polls) ---------------------------------------------

    def track_delayed(
        self, future: asyncio.Future[Any], handle: asyncio.TimerHandle, value: Any
    ) -> None:
        self._delayed[future] = (handle, value)
        future.add_done_callback(self._delayed.pop)

    # -- shutdown --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Answer everything that is parked (Kafka answers NOT_COORDINATOR on unload)."""
        self.closing = True
        self.apply(self.groups.shutdown())
        for future, (handle, value) in list(self._delayed.items()):
            handle.cancel()
            if not future.done():
                future.set_result(value)
        self.timers.cancel_all()


def _loggable(value: Any) -> bool:
    return not isinstance(value, bytes | bytearray)
