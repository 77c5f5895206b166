"""The state every request handler reads: settings, clock, topics, groups and security.

Sans-IO: nothing here touches the event loop, the store or a socket. Handlers record what
must be written (``Outcome.topics``, state-machine records) and the runtime writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from protocol.apis.api_versions import ApiVersionsResponseApiVersion
from protocol.errors import ErrorCode

from ..cluster.routing import Routing, SingleNode
from ..group.coordinator import GroupCoordinator
from ..group.events import LimitReached
from ..security.runtime import Security
from ..settings.config import Settings
from ..shared.catalog import Catalog, Topic, valid_topic_name
from ..shared.clock import Clock
from ..shell.regex_worker import RegexResolver
from ..upstream.ends import LogEnds
from .connection_context import ConnectionContext
from .outcome import Outcome, Pending

log = structlog.get_logger("coordinator")

#: Unknown topic names remembered for the once-per-name warning (a hostile client could
#: ask for millions).
MAX_WARNED_TOPICS = 10_000


#: Makes the node's state machine from its arguments: ``GroupCoordinator``, or (a seam for
#: the conformance suite's deliberate faults) a subclass that overrides its public calls.
Coordinator = Callable[..., GroupCoordinator[Pending]]


class Node:
    def __init__(
        self, settings: Settings, clock: Clock, coordinator: Coordinator = GroupCoordinator
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.catalog = Catalog()
        self.groups: GroupCoordinator[Pending] = coordinator(
            settings.group,
            topic_partitions=self._partitions_of,
            topic_names=lambda: [t.name for t in self.catalog.all()],
            topic_count=lambda: len(self.catalog),
        )
        self.security = Security(settings.security)
        consumer = settings.group.consumer
        #: Compiles and matches clients' regex subscriptions in a child process, started
        #: on the first pattern (handlers call it from an Offloaded outcome's work).
        self.regex_resolver = RegexResolver(
            consumer.regex_cache_bytes,
            consumer.regex_resolve_timeout_ms,
            consumer.regex_max_pending,
        )
        #: Set by the runtime once shutdown starts: long polls are answered at once.
        self.closing = False
        #: What ApiVersions advertises: set by the dispatcher from its routes.
        self.api_versions: list[ApiVersionsResponseApiVersion] = []
        #: Which node coordinates a group (a cluster node replaces it: cluster/).
        self.routing: Routing = SingleNode()
        #: Unknown topics clients asked about, each warned about once (bounded).
        self._warned_topics: set[str] = set()
        #: Log-end offsets and lag (``serve --upstream``: read from the upstream; else empty).
        self.log_ends = LogEnds()

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def _partitions_of(self, name: str) -> int:
        topic = self.catalog.get(name)
        return 0 if topic is None else topic.partitions

    def advertised_for(self, conn: ConnectionContext) -> tuple[str, int]:
        """The address of the listener the client connected on (Kafka answers each
        listener with its own advertised address)."""
        return conn.listener.advertised_address if conn.listener else self.settings.advertised

    # -- topics ----------------------------------------------------------------------------

    def catalog_has_room(self, partitions: int, error: ErrorCode, out: Outcome[Any]) -> bool:
        """Whether a topic of ``partitions`` fits the catalog's limits; if not, the hit
        (answered with ``error``) is emitted as an event."""
        if len(self.catalog) >= self.settings.max_topics:
            limit, value = "max_topics", self.settings.max_topics
        elif (
            sum(t.partitions for t in self.catalog.all()) + partitions
            > self.settings.max_partitions
        ):
            limit, value = "max_partitions", self.settings.max_partitions
        else:
            return True
        out.emit(LimitReached(None, limit, value, error.name))
        return False

    def create_topic(self, name: str, partitions: int, out: Outcome[Any]) -> Topic:
        """Create a virtual topic; ``out`` persists it before its reply is sent."""
        topic = self.catalog.create(name, partitions)
        log.info("TopicCreated", topic=name, partitions=partitions)
        out.topics.append((name, partitions))
        return topic

    def warn_unknown_topic(self, name: str) -> None:
        """A consumer subscribed to a topic that does not exist gets no partitions, and
        nothing tells it why: say it in the log, once per name."""
        if name in self._warned_topics or len(self._warned_topics) >= MAX_WARNED_TOPICS:
            return
        self._warned_topics.add(name)
        log.warning(
            "unknown topic",
            topic=name,
            hint="create it with --topic NAME:PARTITIONS or CreateTopics, or start with"
            " --auto-create-topics; until then its consumers get no partitions",
        )

    def auto_create_topic(self, name: str, out: Outcome[Any]) -> Topic | None:
        if not self.settings.auto_create_topics:
            return None
        if not self.catalog_has_room(
            self.settings.num_partitions, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, out
        ):
            return None
        if not valid_topic_name(name):
            return None
        return self.create_topic(name, self.settings.num_partitions, out)
