"""The daemon in front of an upstream cluster (I/O): what the server hands a forwarded
request to, and the upstream's topics kept in the groups' catalog.

A forwarded frame goes out as it came (its correlation id aside) on the link its client
connection leased for the upstream broker it reaches, and the answer comes back as the
upstream wrote it: record batches are never decoded. Only what must change is decoded and
rewritten: Metadata (brokers, ids), requests a topic ACL cuts, and answers the daemon makes
itself when the upstream fails (retriable errors, ``refusals.py``).
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from protocol import codec
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.describe_configs import DescribeConfigsRequest
from protocol.apis.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from protocol.apis.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponseTopic,
)
from protocol.errors import DecodeError, ErrorCode
from protocol.frames import Request, decode_request, decode_response, encode_request
from protocol.headers import RequestHeader
from protocol.schema import Struct

from ..handlers import admission, classic_groups, cluster, consumer_groups, group_admin, offsets
from ..handlers.connection_context import ConnectionContext
from ..handlers.node import Node
from ..security.acls import Operation
from ..security.authz import may_create_topic, may_topic
from ..settings.config import Settings
from ..shell.connection import response_frame
from . import gate, metadata, versions, wire
from .ends import UpstreamState
from .link import Link, UpstreamError, UpstreamTimeout
from .pool import Pool
from .refusals import refusal
from .settings import UpstreamSettings

log = structlog.get_logger("upstream")

#: Binds the daemon's addresses for one upstream broker: (upstream id) -> listener name ->
#: the advertised (host, port) forwarding to it.
Bind = Callable[[int], Coroutine[Any, Any, Mapping[str, tuple[str, int]]]]

KEY_TYPE_TRANSACTION = 1

#: One-group requests a port of an upstream broker answers NOT_COORDINATOR (the groups
#: are coordinated at the daemon's own address), with the handlers' own refusals.
_NOT_COORDINATED_HERE: dict[int, Callable[[Any, int, ErrorCode], Struct]] = {
    ApiKey.JOIN_GROUP: classic_groups.join_refused,
    ApiKey.SYNC_GROUP: classic_groups.sync_refused,
    ApiKey.HEARTBEAT: classic_groups.heartbeat_refused,
    ApiKey.LEAVE_GROUP: classic_groups.leave_refused,
    ApiKey.OFFSET_COMMIT: offsets.commit_refused,
    ApiKey.OFFSET_DELETE: offsets.offset_delete_refused,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.heartbeat_refused,
}
#: Batch group queries a port of an upstream broker answers NOT_COORDINATOR for each group
#: (their handlers, told every group was refused).
_NOT_COORDINATED_EACH: dict[int, Callable[..., Any]] = {
    ApiKey.OFFSET_FETCH: offsets.offset_fetch,
    ApiKey.DESCRIBE_GROUPS: group_admin.describe_groups,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.consumer_group_describe,
}
TRANSACTIONS_REFUSED = (
    "transactions are not served in front of an upstream broker (serve --upstream): the"
    " upstream's transaction coordinator cannot write markers into this daemon's offsets;"
    " see docs/upstream.md"
)

#: What a client is told when the upstream failed its request: errors every client
#: retries after refreshing its metadata.
_RETRIABLE: dict[int, int] = {
    ApiKey.PRODUCE: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ApiKey.FETCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ApiKey.LIST_OFFSETS: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ApiKey.METADATA: ErrorCode.LEADER_NOT_AVAILABLE,
    ApiKey.CREATE_TOPICS: ErrorCode.REQUEST_TIMED_OUT,
    ApiKey.DELETE_TOPICS: ErrorCode.REQUEST_TIMED_OUT,
    ApiKey.DESCRIBE_CONFIGS: ErrorCode.REQUEST_TIMED_OUT,
    ApiKey.INIT_PRODUCER_ID: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


class Route:
    """One client connection's way upstream: the upstream broker its listener forwards
    to (None: the daemon's own listener, which forwards to any), and its leased links."""

    __slots__ = ("broker", "links")

    def __init__(self, broker: int | None) -> None:
        self.broker = broker
        self.links: dict[tuple[str, int], Link] = {}


@dataclass(slots=True)
class Status:
    """What the console and logs say about the upstream."""

    reachable: bool | None = None  # None: not tried yet
    error: str | None = None
    brokers: int = 0
    topics: int = 0


class Upstream:
    def __init__(self, settings: Settings, node: Node, bind: Bind) -> None:
        assert settings.upstream is not None
        self.settings: UpstreamSettings = settings.upstream
        self.node = node
        self._bind = bind
        self._loop = asyncio.get_running_loop()
        self.ids = metadata.BrokerIds(self.settings.node_id_offset)
        #: Upstream broker id -> its address, as the upstream advertises it.
        self.brokers: dict[int, tuple[str, int]] = {}
        #: Upstream broker id -> listener name -> our address forwarding to it.
        self.ports: dict[int, Mapping[str, tuple[str, int]]] = {}
        self._binding: dict[int, asyncio.Task[Mapping[str, tuple[str, int]]]] = {}
        self._pools: dict[tuple[str, int], Pool] = {}
        self._boot = 0
        self._ours = list(node.api_versions)  # the dispatcher's routes
        #: What the forwarded APIs are advertised at (api key -> (min, max)).
        self.forwarded: dict[int, tuple[int, int]] = {}
        self._upstream_versions: dict[int, tuple[int, int]] = {}
        #: Whether the upstream's Metadata names topics by id (Metadata v10+ with ids):
        #: if not, clients see the catalog's ids and fetch by name.
        self.topic_ids = True
        self._set_versions(
            {key: (BY_KEY[key].min_version, BY_KEY[key].max_version) for key in wire.FORWARDED}
        )
        self._versions_known = False
        self.status = Status()
        #: The upstream's last complete Metadata answer: clients are answered from it
        #: while the upstream is unreachable (their groups keep their assignments).
        self._last_metadata: MetadataResponse | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._closing = False

    # -- life -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Learn the upstream's versions and topics (a bounded try: an upstream that is
        down does not stop the daemon), then keep its topics fresh."""
        await self.refresh()
        if not self.status.reachable:
            log.warning(
                "upstream unreachable at start",
                upstream=self._bootstrap_text,
                error=self.status.error,
                hint="the groups are served; records flow once it answers",
            )
        self._refresher = self._loop.create_task(self._refresh_loop())

    async def close(self) -> None:
        self._closing = True
        if self._refresher is not None:
            self._refresher.cancel()
        for task in self._binding.values():
            task.cancel()
        for pool in self._pools.values():
            pool.close()

    async def _refresh_loop(self) -> None:
        interval = self.settings.metadata_refresh_ms / 1000
        while not self._closing:
            await asyncio.sleep(interval)
            try:
                await self.refresh()
            except Exception:  # never the end of the refresher: the next turn tries again
                log.exception("upstream refresh failed")

    async def refresh(self) -> None:
        """Read the upstream's versions (until known) and every topic, for the groups."""
        pool = self._pool(self._any_address())
        link = pool.lease()
        timeout_s = self.settings.request_timeout_ms / 1000
        try:
            if not self._versions_known:
                answer = await link.request(ApiVersionsRequest(), 0, timeout_s)
                assert isinstance(answer, ApiVersionsResponse)
                if answer.error_code == ErrorCode.NONE:
                    self._set_versions(
                        {v.api_key: (v.min_version, v.max_version) for v in answer.api_keys}
                    )
                    self._versions_known = True
            version = min(12, self.forwarded.get(ApiKey.METADATA, (0, 12))[1])
            response = await link.request(MetadataRequest(topics=None), version, timeout_s)
            assert isinstance(response, MetadataResponse)
            self._last_metadata = copy.deepcopy(response)
            await self._learn(response, complete=True)
        except (UpstreamError, DecodeError, AssertionError, OSError) as exc:
            link.close()
            self._unreachable(exc)
            self._boot += 1  # the next try (and the next "any" link) goes elsewhere
            return
        pool.give_back(link)
        self._reachable()

    def _set_versions(self, upstream: Mapping[int, tuple[int, int]]) -> None:
        self._upstream_versions = dict(upstream)
        advertised = versions.narrowed(self._ours, upstream, self.topic_ids)
        self.node.api_versions = advertised
        self.forwarded = {
            v.api_key: (v.min_version, v.max_version)
            for v in advertised
            if v.api_key in wire.FORWARDED
        }

    def _reachable(self) -> None:
        if self.status.reachable is False:
            log.warning("upstream reachable again", upstream=self._bootstrap_text)
        self.status.reachable, self.status.error = True, None
        self._publish()

    def _unreachable(self, exc: BaseException) -> None:
        reason = str(exc) or type(exc).__name__
        if self.status.reachable is not False:
            log.warning("upstream unreachable", upstream=self._bootstrap_text, error=reason)
        self.status.reachable, self.status.error = False, reason
        self._publish()

    def _publish(self) -> None:
        """What the console shows of the upstream (the node's view of it)."""
        shown = self.node.log_ends.upstream
        if shown is None:
            shown = self.node.log_ends.upstream = UpstreamState()
        shown.reachable, shown.error = self.status.reachable, self.status.error

    @property
    def _bootstrap_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.settings.bootstrap)

    # -- topics and brokers ---------------------------------------------------------------------

    async def _learn(self, response: MetadataResponse, complete: bool) -> None:
        """What a Metadata answer says: brokers (each gets our addresses), topics (for the
        groups' catalog)."""
        brokers = metadata.upstream_brokers(response)
        if complete or brokers:
            for broker_id, address in brokers.items():
                if self.brokers.get(broker_id) != address:
                    self.brokers[broker_id] = address
            if complete:
                for gone in set(self.brokers) - set(brokers):
                    del self.brokers[gone]
        catalog = self.node.catalog
        if complete and response.topics and self.topic_ids and not metadata.names_ids(response):
            log.info("the upstream names no topic ids: clients fetch by topic name")
            self.topic_ids = False
            self._set_versions(self._upstream_versions)
        catalog.mirror(metadata.catalog_topics(response, catalog.id_for), complete=complete)
        self.status.brokers, self.status.topics = len(self.brokers), len(catalog)
        await self._ensure_ports(brokers)

    async def _ensure_ports(self, broker_ids: Any) -> None:
        for broker_id in broker_ids:
            if broker_id in self.ports:
                continue
            task = self._binding.get(broker_id)
            if task is None:
                task = self._binding[broker_id] = self._loop.create_task(self._bind(broker_id))
            try:
                self.ports[broker_id] = await asyncio.shield(task)
            except OSError as exc:
                self._binding.pop(broker_id, None)
                log.error("cannot listen for an upstream broker", broker=broker_id, error=str(exc))

    def _any_address(self) -> tuple[str, int]:
        """Where requests for no broker in particular go: the known brokers, then the
        bootstrap addresses, the next one after each failed refresh."""
        candidates = [self.brokers[b] for b in sorted(self.brokers)]
        candidates += [a for a in self.settings.bootstrap if a not in candidates]
        return candidates[self._boot % len(candidates)]

    def _pool(self, address: tuple[str, int]) -> Pool:
        pool = self._pools.get(address)
        if pool is None:
            pool = self._pools[address] = Pool(address, self.settings)
        return pool

    def _link(self, route: Route) -> Link:
        address = None
        if route.broker is not None:
            address = self.brokers.get(route.broker)
        if address is None:
            address = self._any_address()
        link = route.links.get(address)
        if link is None or link.closed:
            link = route.links[address] = self._pool(address).lease()
        return link

    def release(self, route: Route) -> None:
        """The client connection is gone: its links go back to their pools."""
        links, route.links = route.links, {}
        for address, link in links.items():
            self._pool(address).give_back(link)

    # -- forwarding ---------------------------------------------------------------------------

    def takes(self, frame: bytes, ctx: ConnectionContext, route: Route | None = None) -> bool:
        """Whether ``frame`` is the upstream's business (else the dispatcher's), or a
        group request at a port of an upstream broker, which does not coordinate groups."""
        if len(frame) < 10 or not ctx.authenticated:
            return False
        key, version = wire.key_and_version(frame)
        if (
            (key in _NOT_COORDINATED_HERE or key in _NOT_COORDINATED_EACH)
            and route is not None
            and route.broker is not None
        ):
            return BY_KEY[key].supports(version)
        if key == ApiKey.FIND_COORDINATOR:
            return _finds_transactions(frame)
        served = self.forwarded.get(key)
        if served is None or not served[0] <= version <= served[1]:
            return False
        if key == ApiKey.DESCRIBE_CONFIGS:
            return _configs_of_topics(frame)
        return True

    def forward(
        self, frame: bytes, route: Route, ctx: ConnectionContext
    ) -> asyncio.Future[bytes] | None:
        """The response frame (size-prefixed) to a request ``takes`` took, in time; None
        when no answer is due (Produce with acks=0)."""
        key, version = wire.key_and_version(frame)
        flexible = BY_KEY[key].is_flexible(version)
        if key in (ApiKey.PRODUCE, ApiKey.FETCH) and not self.node.security.acls_enabled:
            link = self._link(route)
            if key == ApiKey.PRODUCE and wire.produce_acks(frame, version, flexible) == 0:
                link.send_unanswered(frame)
                return None
            timeout_s = self._timeout_s(frame, key, version, flexible)
            out: asyncio.Future[bytes] = self._loop.create_future()
            link.send_then(
                frame, timeout_s, functools.partial(self._relayed, out, route, link, frame)
            )
            return out
        try:
            request = decode_request(frame)
        except DecodeError:
            listing = _all_topics_metadata(frame, key, version, flexible)
            if listing is None:
                raise  # the connection closes
            request = listing
        if key == ApiKey.PRODUCE and getattr(request.body, "acks", 1) == 0:
            self._produce_unanswered(frame, request, route, ctx)
            return None
        return self._loop.create_task(self._decoded(frame, request, route, ctx))

    def _timeout_s(self, frame: bytes, key: int, version: int, flexible: bool) -> float:
        timeout_ms = self.settings.request_timeout_ms
        if key == ApiKey.FETCH:
            timeout_ms += max(wire.fetch_max_wait_ms(frame, version, flexible), 0)
        return timeout_ms / 1000

    def _relayed(
        self,
        out: asyncio.Future[bytes],
        route: Route,
        link: Link,
        frame: bytes,
        answer: bytes | None,
        exc: BaseException | None,
    ) -> None:
        if out.done():
            return
        if answer is not None:
            out.set_result(wire.readdressed_response(answer, wire.correlation_of(frame)))
            return
        if exc is None:
            exc = UpstreamError("no answer")
        self._dropped(route, link)
        try:
            out.set_result(self._failed_answer(decode_request(frame), exc))
        except Exception as failed:
            out.set_exception(failed)

    def _dropped(self, route: Route, link: Link) -> None:
        for address, leased in list(route.links.items()):
            if leased is link:
                del route.links[address]
        link.close()

    def _failed_answer(self, request: Request, exc: BaseException) -> bytes:
        key = request.api.key
        message = f"upstream: {exc}" if str(exc) else "upstream failed"
        if not isinstance(exc, UpstreamTimeout):
            self._unreachable(exc)
        body = refusal(key, request.body, _RETRIABLE[key], message)
        return response_frame(request.api, request.version, request.header.correlation_id, body)

    def _produce_unanswered(
        self, frame: bytes, request: Request, route: Route, ctx: ConnectionContext
    ) -> None:
        """acks=0: nothing is answered. A refused topic's records are dropped and the
        connection is closed, as Kafka tells an acks=0 producer that a write failed."""
        cut = self._cut(request, ctx)
        if cut.forward is not None:
            sent = frame if cut.forward is request.body else _encoded(request, cut.forward)[4:]
            self._link(route).send_unanswered(sent)
        if cut.refused:
            raise PermissionError("Produce with acks=0 to a topic the client may not write")

    def _cut(self, request: Request, ctx: ConnectionContext) -> gate.Split:
        if not self.node.security.acls_enabled or request.api.key not in gate.SHAPES:
            return gate.Split(request.body, [])  # InitProducerId names no topic
        security = self.node.security

        def may(operation: Operation, name: str) -> bool:
            if operation == Operation.CREATE:
                return may_create_topic(security, ctx, name)
            return may_topic(security, ctx, operation, name)

        def name_of(topic_id: Any) -> str | None:
            topic = self.node.catalog.by_id(topic_id)
            return topic.name if topic is not None else None

        return gate.split(request.api.key, request.version, request.body, may, name_of)

    async def _decoded(
        self, frame: bytes, request: Request, route: Route, ctx: ConnectionContext
    ) -> bytes:
        """A forwarded request that is decoded: checked against topic ACLs, refused by
        the daemon (transactions), or answered by Metadata to rewrite."""
        api, version, body = request.api, request.version, request.body
        correlation_id = request.header.correlation_id
        key = api.key
        if key == ApiKey.FIND_COORDINATOR:
            return response_frame(
                api, version, correlation_id, _transactions_refused(body, version)
            )
        refuse = _NOT_COORDINATED_HERE.get(key)
        if refuse is not None:
            # As a Kafka broker that is not the group's coordinator: the client asks
            # FindCoordinator again, which names the daemon's own address.
            not_here = refuse(body, version, ErrorCode.NOT_COORDINATOR)
            return response_frame(api, version, correlation_id, not_here)
        each = _NOT_COORDINATED_EACH.get(key)
        if each is not None:
            row = admission.BY_API_KEY[key]
            assert row.group_ids is not None
            refused_all = dict.fromkeys(row.group_ids(body, version), ErrorCode.NOT_COORDINATOR)
            outcome = each(self.node, body, version, ctx, refused_all)
            assert isinstance(outcome.reply, Struct) and outcome.effects is None
            return response_frame(api, version, correlation_id, outcome.reply)
        if key == ApiKey.INIT_PRODUCER_ID and getattr(body, "transactional_id", None) is not None:
            log.info(
                "transactional producer refused", client=ctx.client_id, why=TRANSACTIONS_REFUSED
            )
            return response_frame(
                api,
                version,
                correlation_id,
                refusal(key, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            )
        if key == ApiKey.METADATA:
            return await self._metadata(frame, request, route, ctx)
        cut = self._cut(request, ctx)
        refused = None
        if cut.refused:
            part = gate.refused_part(key, version, body, cut)
            refused = refusal(key, part, lambda entry: _code_of(cut.refused, entry))
        answer: Struct | None = None
        if cut.forward is not None:
            sent = frame if cut.forward is body else _encoded(request, cut.forward)[4:]
            link = self._link(route)
            timeout_s = self._timeout_s(frame, key, version, api.is_flexible(version))
            try:
                raw = await link.send(sent, timeout_s)
            except UpstreamError as exc:
                self._dropped(route, link)
                return self._failed_answer(request, exc)
            if refused is None:
                return wire.readdressed_response(raw, correlation_id)
            answer = decode_response(api, version, raw)[1]
        assert refused is not None
        return response_frame(api, version, correlation_id, gate.merged(key, answer, refused))

    async def _metadata(
        self, frame: bytes, request: Request, route: Route, ctx: ConnectionContext
    ) -> bytes:
        api, version = request.api, request.version
        body = request.body
        assert isinstance(body, MetadataRequest)
        correlation_id = request.header.correlation_id
        listed_all = body.topics is None or (version == 0 and not body.topics)
        acls = self.node.security.acls_enabled
        sent = body
        refused: list[tuple[Any, int]] = []
        if acls and not listed_all:
            cut = self._cut(request, ctx)
            refused = cut.refused
            if cut.forward is not body:
                sent = copy.copy(body)
                sent.topics = cut.forward.topics if cut.forward is not None else []  # type: ignore[attr-defined]
            security = self.node.security
            if sent.allow_auto_topic_creation and not all(
                may_create_topic(security, ctx, t.name or "") for t in sent.topics or ()
            ):
                sent = copy.copy(sent) if sent is body else sent
                sent.allow_auto_topic_creation = False
        link = self._link(route)
        try:
            if sent is body:
                raw = await link.send(frame, self.settings.request_timeout_ms / 1000)
                response = decode_response(api, version, raw)[1]
            elif version == 0 and not sent.topics:
                response = MetadataResponse(topics=[])  # v0's empty list would mean all
            else:
                response = await link.request(
                    sent, version, self.settings.request_timeout_ms / 1000
                )
        except (UpstreamError, DecodeError) as exc:
            self._dropped(route, link)
            if isinstance(exc, DecodeError):
                log.warning("upstream Metadata answer unreadable", error=str(exc))
            cached = self._cached_metadata(sent, listed_all)
            if cached is None:
                return self._failed_answer(request, exc)
            if not isinstance(exc, UpstreamTimeout):
                self._unreachable(exc)
            response = cached
        else:
            assert isinstance(response, MetadataResponse)
            await self._learn(response, complete=listed_all and not acls)
        describable = None
        if acls:
            security = self.node.security

            def describable(name: str) -> bool:
                return may_topic(security, ctx, Operation.DESCRIBE, name)

        listener = ctx.listener.name if ctx.listener is not None else "PLAINTEXT"
        addresses = {
            broker_id: by_listener[listener]
            for broker_id, by_listener in self.ports.items()
            if listener in by_listener and broker_id in self.brokers
        }
        rewritten = metadata.rewritten(
            response,
            ours=self._our_brokers(ctx),
            addresses=addresses,
            ids=self.ids,
            id_for=None if self.topic_ids else self.node.catalog.id_for,
            controller_id=cluster.presented_leader(self.node, ctx, 0),
            cluster_id=self.node.settings.cluster_id,
            describable=describable,
            listed_all=listed_all,
        )
        if refused:
            rewritten.topics.extend(
                refusal(
                    api.key,
                    MetadataRequest(topics=[e for e, _ in refused]),
                    lambda e: _code_of(refused, e),
                ).topics  # type: ignore[attr-defined]
            )
        return response_frame(api, version, correlation_id, rewritten)

    def _cached_metadata(self, body: MetadataRequest, listed_all: bool) -> MetadataResponse | None:
        """The upstream's last complete answer, cut to what ``body`` asks (a topic it
        did not hold: LEADER_NOT_AVAILABLE, which clients retry)."""
        if self._last_metadata is None:
            return None
        cached = copy.deepcopy(self._last_metadata)
        if listed_all:
            return cached
        by_name = {t.name: t for t in cached.topics}
        by_id = {t.topic_id: t for t in cached.topics}
        topics = []
        for wanted in body.topics or ():
            found = by_name.get(wanted.name) if wanted.name else by_id.get(wanted.topic_id)
            topics.append(
                found
                if found is not None
                else MetadataResponseTopic(
                    error_code=ErrorCode.LEADER_NOT_AVAILABLE,
                    name=wanted.name,
                    topic_id=wanted.topic_id,
                    partitions=[],
                )
            )
        cached.topics = topics
        return cached

    def _our_brokers(self, ctx: ConnectionContext) -> list[MetadataResponseBroker]:
        """Our nodes as the group APIs' Metadata presents them (a node cut off from the
        database leaves itself out)."""
        return cluster.presented_brokers(self.node, ctx)

    # -- the daemon's own requests (lag) -----------------------------------------------------

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The upstream broker leading a partition, as last read (None: not known)."""
        last = self._last_metadata
        if last is None:
            return None
        for t in last.topics:
            if t.name == topic:
                for p in t.partitions:
                    if p.partition_index == partition and p.leader_id >= 0:
                        return p.leader_id
        return None

    async def ask(self, broker_id: int | None, body: Struct, version: int) -> Struct:
        """A request of the daemon's own to an upstream broker (None: any)."""
        address = self.brokers.get(broker_id) if broker_id is not None else None
        pool = self._pool(address or self._any_address())
        link = pool.lease()
        try:
            answer = await link.request(body, version, self.settings.request_timeout_ms / 1000)
        except BaseException:
            link.close()
            raise
        pool.give_back(link)
        return answer


def _all_topics_metadata(frame: bytes, key: int, version: int, flexible: bool) -> Request | None:
    """A Metadata request for every topic that our codec refuses only for what follows
    its topics (librdkafka 2.16's list_topics adds three bytes our schema has no field
    for): forwarded as it came, since the upstream reads it as Kafka does."""
    if key != ApiKey.METADATA:
        return None
    api = BY_KEY[key]
    try:
        header, offset = codec.read(RequestHeader, frame, 0, api.request_header_version(version))
    except DecodeError:
        return None
    null_topics = (
        frame[offset : offset + 1] == b"\x00"
        if flexible
        else (frame[offset : offset + 4] == b"\xff\xff\xff\xff")
    )
    if not null_topics or version < 1:
        return None
    return Request(api, header, MetadataRequest(topics=None))


def _encoded(request: Request, body: Struct) -> bytes:
    return encode_request(
        body, request.version, request.header.correlation_id, request.header.client_id
    )


def _code_of(refused: list[tuple[Any, int]], entry: Any) -> int:
    for candidate, code in refused:
        if candidate is entry:
            return code
    return ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _finds_transactions(frame: bytes) -> bool:
    try:
        request = decode_request(frame)
    except DecodeError:
        return False
    return getattr(request.body, "key_type", 0) == KEY_TYPE_TRANSACTION


def _configs_of_topics(frame: bytes) -> bool:
    """A DescribeConfigs of topics or brokers only (a group's configs are ours)."""
    try:
        body = decode_request(frame).body
    except DecodeError:
        return False
    assert isinstance(body, DescribeConfigsRequest)
    return all(r.resource_type != gate.CONFIG_GROUP for r in body.resources)


def _transactions_refused(body: Any, version: int) -> FindCoordinatorResponse:
    assert isinstance(body, FindCoordinatorRequest)
    code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if version < 4:
        return FindCoordinatorResponse(
            error_code=code, error_message=TRANSACTIONS_REFUSED, node_id=-1, host="", port=-1
        )
    return FindCoordinatorResponse(
        coordinators=[
            FindCoordinatorResponseCoordinator(
                key=key,
                node_id=-1,
                host="",
                port=-1,
                error_code=code,
                error_message=TRANSACTIONS_REFUSED,
            )
            for key in body.coordinator_keys
        ]
    )
