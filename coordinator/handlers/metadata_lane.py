"""The Metadata lane: a Metadata request answered with the bytes the general path gave the
same request, while nothing it depends on has changed.

Clients ask the same Metadata again and again (a consumer refreshes its subscription's
topics; admin tools and regex subscriptions ask for all of them), and building the answer
is one object per partition and an encoding of each: 340 µs for three topics of ten
partitions, 60 times a heartbeat (``bench.commit_metadata``). What it depends on is few
things that rarely change: the request (version, topics, flags), the listener it came on
(the advertised address), the catalog, the daemon's settings, and, with ACLs on, the
caller and the ACLs; in a cluster, which nodes this one may name (``routing.named``) and
whether its lease ran out (``routing.stale``).

The lane keeps, per (request bytes after the correlation id, listener, and with ACLs the
principal and host), the general path's answer: its bytes around the correlation id, and
what it was made from (the catalog's change count, the settings, the ACLs, the routing
view). A remembered answer whose sources are unchanged is sent with the request's
correlation id; anything else is answered by the general path itself (the dispatcher and
``cluster.metadata``, called from here: the same admission and code), and its answer
remembered. A request that may create a topic (auto-creation on, asked for, and a topic
named that the catalog lacks) is left to the server's general path: its answer waits for
the topic to be stored. ``tests/coordinator/handlers/test_metadata_lane.py`` holds the
lane to the general path's bytes over generated requests and changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.apis import BY_KEY
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import DecodeError
from protocol.frames import Request, decode_request, encode_response

from ..cluster.routing import ClusterRouting
from .connection_context import ConnectionContext
from .node import Node

METADATA_KEY = 3
#: Remembered answers, all told at most this many bytes; past it the lane starts afresh.
ANSWER_BYTES = 32 * 1024 * 1024
#: And at most this many of them (requests differ by client id and topics).
ANSWERS_HELD = 4_096

_API = BY_KEY[METADATA_KEY]

#: The lane's answer: the response frame, the remembered body it encodes (None: the
#: general path made it, and counted it), and the request version.
Answered = tuple[bytes, MetadataResponse | None, int]


class _Answer:
    """One remembered answer and what it was made from."""

    __slots__ = (
        "authorizer",
        "body",
        "catalog",
        "client_id",
        "head",
        "routing",
        "settings",
        "tail",
    )

    def __init__(
        self, frame: bytes, body: MetadataResponse, client_id: str, sources: tuple[Any, ...]
    ) -> None:
        self.head, self.tail = frame[:4], frame[8:]
        self.body = body
        self.client_id = client_id
        self.catalog, self.settings, self.authorizer, self.routing = sources


class MetadataLane:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.answers: dict[tuple[Any, ...], _Answer] = {}
        self._bytes = 0
        #: Answers sent from memory, and answers made by the general path here.
        self.hits = 0
        self.made = 0

    def _key(self, frame: bytes, conn: ConnectionContext) -> tuple[Any, ...]:
        if self.node.security.acls_enabled:
            return (frame[2:4], frame[8:], conn.listener, conn.principal, conn.client_host)
        return (frame[2:4], frame[8:], conn.listener)

    def sources(self, now_ms: int) -> tuple[Any, ...]:
        """What an answer made now is made from (read before and after making it)."""
        node = self.node
        routing = node.routing
        view = None
        if isinstance(routing, ClusterRouting):
            view = (routing.stale(now_ms), routing.named(now_ms))
        authorizer = node.security.authorizer if node.security.acls_enabled else None
        return (node.catalog.changes, node.settings, authorizer, view)

    def answer(
        self,
        frame: bytes,
        conn: ConnectionContext,
        general: Callable[[Request, ConnectionContext], object],
    ) -> Answered | None:
        """The answer to a Metadata frame of an authenticated connection: remembered, or
        made by ``general`` (the dispatcher and the handler, as the server's general path
        calls them, counted in metrics there) and remembered; None: the server's general
        path must take it."""
        found = self.answers.get(self._key(frame, conn))
        version = frame[2] << 8 | frame[3]
        if found is not None and self._unchanged(found):
            self.hits += 1
            conn.client_id = found.client_id
            return found.head + frame[4:8] + found.tail, found.body, version
        request = self._request(frame)
        if request is None:
            return None
        conn.client_id = request.header.client_id or ""
        node = self.node
        before = self.sources(node.now_ms())
        body = general(request, conn)
        # ``_request`` leaves out what could create a topic: nothing waits for a write.
        assert isinstance(body, MetadataResponse)
        self.made += 1
        data = encode_response(_API, version, request.header.correlation_id, body)
        if before == self.sources(node.now_ms()):  # unchanged while it was made
            self._remember(frame, conn, data, body, request.header.client_id or "", before)
        return data, None, version

    def _unchanged(self, found: _Answer) -> bool:
        node = self.node
        return (
            found.catalog == node.catalog.changes
            and found.settings is node.settings
            and (not node.security.acls_enabled or found.authorizer is node.security.authorizer)
            and (
                found.routing is None  # made on one node, and still one
                if not isinstance(node.routing, ClusterRouting)
                else found.routing == self.sources(node.now_ms())[3]
            )
        )

    def _request(self, frame: bytes) -> Request | None:
        """The frame decoded, when the general path answers it at once (no topic to create:
        that answer waits for a write); None: the server's general path takes it (a frame
        that does not decode is refused there)."""
        try:
            request = decode_request(frame)
        except DecodeError:
            return None
        body = request.body
        if not isinstance(body, MetadataRequest):
            return None
        node = self.node
        if body.allow_auto_topic_creation and node.settings.auto_create_topics:
            catalog = node.catalog
            if any(t.name and catalog.get(t.name) is None for t in body.topics or ()):
                return None
        return request

    def _remember(
        self,
        frame: bytes,
        conn: ConnectionContext,
        data: bytes,
        body: MetadataResponse,
        client_id: str,
        sources: tuple[Any, ...],
    ) -> None:
        if len(self.answers) >= ANSWERS_HELD or self._bytes + len(data) > ANSWER_BYTES:
            self.answers.clear()
            self._bytes = 0
        self.answers[self._key(frame, conn)] = _Answer(data, body, client_id, sources)
        self._bytes += len(data)
