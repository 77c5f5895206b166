"""Connections to brokers, shared by any number of group members in one process.

Kafka answers the requests of one connection strictly in order and reads the next request
only after answering the current one, so a JoinGroup or SyncGroup that the coordinator parks
(until every member has joined, or the leader has synced) blocks its connection. Hence two
kinds of connection per broker address:

* one **shared** connection, pipelined, for everything answered at once: ApiVersions,
  Metadata, FindCoordinator, Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup and the admin
  APIs. Thousands of members heartbeat over it without waiting for each other;
* **exclusive** connections for JoinGroup/SyncGroup, leased by one member for one rebalance
  round and returned to an idle list afterwards. A rebalance needs every member's JoinGroup
  parked at the same time, so a group of N members needs N of them at once; the lease cap
  (``max_exclusive``) bounds file descriptors, and members beyond it wait for a lease (with
  a group larger than the cap, rebalances cannot complete: size the cap to the groups).

API versions are negotiated once per address with ApiVersions: each request uses the
highest version both this client and the broker support.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.errors import ErrorCode
from protocol.schema import Struct

from .connection import KafkaConnectionClient, connect
from .errors import KafkaClientError, UnsupportedApiError
from .sasl import AuthenticationFailed

T = TypeVar("T", bound=Struct)
R = TypeVar("R")
Address = tuple[str, int]

SOFTWARE_NAME = "group-coordinator-client"
SOFTWARE_VERSION = "0.1.0"
KEY_TYPE_GROUP = 0


def parse_address(value: str) -> Address:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


#: The start of the error when no bootstrap address answers.
NO_BOOTSTRAP = "no bootstrap server reachable"


def parse_bootstrap(bootstrap: str | Sequence[str]) -> list[Address]:
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    return [parse_address(item.strip()) for item in items if item.strip()]


#: APIs whose newest versions name topics by id only (Fetch v13+, OffsetCommit and OffsetFetch
#: v10+): this client names topics, so it speaks them up to here.
NAMES_TOPICS_UNTIL = {1: 12, 8: 9, 9: 9}


class ApiVersionTable:
    """The broker's advertised ranges; ``pick`` chooses the version to send."""

    def __init__(self, ranges: dict[int, tuple[int, int]]) -> None:
        self.ranges = ranges

    def pick(self, request_type: type[Struct]) -> int:
        assert request_type.kafka is not None and request_type.kafka.api_key is not None
        key = request_type.kafka.api_key
        ours = BY_KEY[key]
        theirs = self.ranges.get(key)
        if theirs is None:
            raise UnsupportedApiError(f"broker does not serve {ours.name}")
        ceiling = min(ours.max_version, NAMES_TOPICS_UNTIL.get(key, ours.max_version))
        low, high = max(ours.min_version, theirs[0]), min(ceiling, theirs[1])
        if low > high:
            raise UnsupportedApiError(f"no common version of {ours.name}: broker {theirs}")
        return high


async def within(awaitable: Awaitable[R], seconds: float) -> R:
    """``awaitable``'s result, or TimeoutError after ``seconds``. Not ``asyncio.wait_for``:
    on Python 3.11 it turns a cancellation that arrives as the awaited future fails (a
    connection closing as its member is closed) into that failure, which a member's
    retry loop then catches and retries for ever, cancelled or not."""
    async with asyncio.timeout(seconds):
        return await awaitable


class BrokerConnection:
    """One connection and the versions negotiated for its broker."""

    def __init__(self, address: Address, client: KafkaConnectionClient, versions: ApiVersionTable):
        self.address = address
        self.client = client
        self.versions = versions

    @property
    def closed(self) -> bool:
        transport = self.client.transport
        return transport is None or transport.is_closing()

    async def call(self, body: T, version: int | None = None, *, timeout: float = 30.0) -> Any:
        """Send ``body`` (at the negotiated version unless given) and await its response."""
        if version is None:
            version = self.versions.pick(type(body))
        return await within(self.client.send(body, version), timeout)

    def close(self) -> None:
        self.client.close()


async def negotiate_versions(client: KafkaConnectionClient, timeout: float) -> ApiVersionTable:
    """ApiVersions at our newest version; a broker that does not know it answers with an
    error in the v0 layout (KIP-511), so fall back to v0, which every broker serves."""
    newest = BY_KEY[18].max_version
    request = ApiVersionsRequest(
        client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION
    )
    try:
        try:
            resp = await within(client.send(request, newest), timeout)
            if resp.error_code != ErrorCode.NONE:
                raise KafkaClientError.of(resp.error_code, "ApiVersions")
        except (KafkaClientError, ValueError):
            resp = await within(client.send(ApiVersionsRequest(), 0), timeout)
    except TimeoutError:
        raise KafkaClientError(
            f"{client.peer} did not answer ApiVersions within {timeout:g} s"
            " (is it a Kafka listener?)"
        ) from None
    assert isinstance(resp, ApiVersionsResponse)
    if resp.error_code != ErrorCode.NONE:
        raise KafkaClientError.of(resp.error_code, "ApiVersions")
    return ApiVersionTable({k.api_key: (k.min_version, k.max_version) for k in resp.api_keys})


class ConnectionPool:
    """Shared and exclusive connections per broker address (see the module docstring)."""

    def __init__(
        self,
        *,
        client_id: str = SOFTWARE_NAME,
        max_exclusive: int = 10000,
        connect_timeout_s: float = 10.0,
        request_timeout_s: float = 30.0,
    ) -> None:
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._shared: dict[Address, BrokerConnection] = {}
        self._versions: dict[Address, ApiVersionTable] = {}
        self._locks: dict[Address, asyncio.Lock] = {}
        self._idle: dict[Address, list[BrokerConnection]] = {}
        self._leased: set[BrokerConnection] = set()
        self._lease_slots = asyncio.Semaphore(max_exclusive)
        self._coordinators: dict[str, Address] = {}
        self._coordinator_ids: dict[str, int] = {}
        self._lookups = 0  # rotates the bootstrap node FindCoordinator asks first
        self._coordinator_locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    async def _open(self, address: Address) -> KafkaConnectionClient:
        if self._closed:
            raise KafkaClientError("connection pool is closed")
        try:
            return await within(
                connect(address[0], address[1], self.client_id), self.connect_timeout_s
            )
        except (OSError, TimeoutError) as exc:
            raise KafkaClientError(f"cannot connect to {address[0]}:{address[1]}: {exc}") from exc

    async def shared(self, address: Address) -> BrokerConnection:
        conn = self._shared.get(address)
        if conn is not None and not conn.closed:
            return conn
        lock = self._locks.setdefault(address, asyncio.Lock())
        async with lock:
            conn = self._shared.get(address)
            if conn is not None and not conn.closed:
                return conn
            client = await self._open(address)
            try:
                versions = await negotiate_versions(client, self.request_timeout_s)
            except BaseException:
                client.close()
                raise
            self._versions[address] = versions
            conn = BrokerConnection(address, client, versions)
            self._shared[address] = conn
            return conn

    async def versions(self, address: Address) -> ApiVersionTable:
        if address not in self._versions:
            await self.shared(address)
        return self._versions[address]

    @asynccontextmanager
    async def exclusive(self, address: Address) -> AsyncIterator[BrokerConnection]:
        """A connection nobody else sends on until the block exits. It goes back to the idle
        list only if the block ended normally: after a timeout or cancellation a parked
        request may still be outstanding on it."""
        versions = await self.versions(address)
        async with self._lease_slots:
            idle = self._idle.setdefault(address, [])
            conn = None
            while idle and conn is None:
                candidate = idle.pop()
                if candidate.closed:
                    continue
                conn = candidate
            if conn is None:
                conn = BrokerConnection(address, await self._open(address), versions)
            self._leased.add(conn)
            try:
                yield conn
            except BaseException:
                conn.close()
                raise
            finally:
                self._leased.discard(conn)
            if not conn.closed and not self._closed:
                idle.append(conn)
            else:
                conn.close()

    async def bootstrap(self, addresses: Sequence[Address]) -> BrokerConnection:
        """A shared connection to the first reachable bootstrap address."""
        errors: list[str] = []
        for address in addresses:
            try:
                return await self.shared(address)
            except AuthenticationFailed:
                raise  # reached, and refused: not a server to look past
            except (KafkaClientError, OSError) as exc:
                errors.append(str(exc))
        raise KafkaClientError(f"{NO_BOOTSTRAP}: " + "; ".join(errors))

    async def find_coordinator(
        self, group_id: str, bootstrap: Sequence[Address], *, refresh: bool = False
    ) -> Address:
        """The group coordinator's address; one lookup serves every member of a group."""
        lock = self._coordinator_locks.setdefault(group_id, asyncio.Lock())
        async with lock:
            if refresh:
                self._coordinators.pop(group_id, None)
            cached = self._coordinators.get(group_id)
            if cached is not None:
                return cached
            host, port = await self._ask_for_coordinator(group_id, bootstrap)
            self._coordinators[group_id] = (host, port)
            return host, port

    async def _ask_for_coordinator(
        self, group_id: str, bootstrap: Sequence[Address]
    ) -> tuple[str, int]:
        """Ask the bootstrap nodes in turn (from a different one each time) until one names
        the coordinator: a node that is paused, or cut off from the cluster and saying so,
        does not keep the member from finding the group elsewhere."""
        self._lookups += 1
        start = self._lookups % len(bootstrap)
        order = [*bootstrap[start:], *bootstrap[:start]]
        timeout = self.request_timeout_s if len(order) == 1 else min(self.request_timeout_s, 3)
        last: Exception = KafkaClientError("no bootstrap server reachable")
        for address in order:
            try:
                conn = await self.shared(address)
                version = conn.versions.pick(FindCoordinatorRequest)
                if version >= 4:
                    body = FindCoordinatorRequest(
                        key_type=KEY_TYPE_GROUP, coordinator_keys=[group_id]
                    )
                else:
                    body = FindCoordinatorRequest(key=group_id, key_type=KEY_TYPE_GROUP)
                resp = await conn.call(body, version, timeout=timeout)
            except (KafkaClientError, OSError, TimeoutError) as exc:
                last = exc
                continue
            assert isinstance(resp, FindCoordinatorResponse)
            if version >= 4:
                if len(resp.coordinators) != 1:
                    raise KafkaClientError("FindCoordinator: expected one coordinator entry")
                entry = resp.coordinators[0]
                code, host, port = entry.error_code, entry.host, entry.port
                node_id = entry.node_id
            else:
                code, host, port = resp.error_code, resp.host, resp.port
                node_id = resp.node_id
            if code == ErrorCode.NONE:
                self._coordinator_ids[group_id] = node_id
                return host, port
            last = KafkaClientError.of(code, f"FindCoordinator({group_id})")
        raise last

    def coordinator_id(self, group_id: str) -> int | None:
        """The node id FindCoordinator last named for the group."""
        return self._coordinator_ids.get(group_id)

    def forget_coordinator(self, group_id: str) -> None:
        self._coordinators.pop(group_id, None)

    @property
    def open_connections(self) -> int:
        shared = sum(1 for c in self._shared.values() if not c.closed)
        idle = sum(1 for conns in self._idle.values() for c in conns if not c.closed)
        return shared + idle + len(self._leased)

    async def close(self) -> None:
        self._closed = True
        for conn in [*self._shared.values(), *self._leased]:
            conn.close()
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._shared.clear()
        self._idle.clear()
