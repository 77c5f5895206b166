"""One asyncio connection to a Kafka broker: send requests, await their responses.

Requests may be pipelined; responses arrive in request order (Kafka answers in order on a
connection), so each is matched with the oldest outstanding request and its correlation id
is checked.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import Any, TypeVar, cast

from protocol.apis import BY_KEY, Api
from protocol.frames import FrameSplitter, decode_response, encode_request
from protocol.schema import Struct

T = TypeVar("T", bound=Struct)


class ConnectionClosed(ConnectionError):
    pass


class KafkaConnectionClient(asyncio.Protocol):
    def __init__(self, client_id: str = "group-coordinator-client") -> None:
        self.client_id = client_id
        self.transport: asyncio.Transport | None = None
        self._splitter = FrameSplitter()
        self._pending: deque[tuple[int, Api, int, asyncio.Future[Any]]] = deque()
        self._correlation = itertools.count(1)
        self._closed = asyncio.Event()

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        for frame in self._splitter.feed(data):
            correlation_id, api, version, fut = self._pending.popleft()
            try:
                got, body = decode_response(api, version, frame)
                if got != correlation_id:
                    raise ConnectionError(f"correlation id {got}, expected {correlation_id}")
            except Exception as exc:
                if not fut.done():
                    fut.set_exception(exc)
                continue
            if not fut.done():
                fut.set_result(body)

    def connection_lost(self, exc: Exception | None) -> None:
        while self._pending:
            *_, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(ConnectionClosed("connection closed"))
        self._closed.set()

    # -- API ---------------------------------------------------------------------------------

    def send(self, body: Struct, version: int) -> asyncio.Future[Any]:
        """Write a request now; the returned future resolves to its response body."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionClosed("connection closed")
        assert body.kafka is not None and body.kafka.api_key is not None
        api = BY_KEY[body.kafka.api_key]
        correlation_id = next(self._correlation)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((correlation_id, api, version, fut))
        self.transport.write(encode_request(body, version, correlation_id, self.client_id))
        return fut

    async def request(self, body: Struct, version: int, response_type: type[T] | None = None) -> T:
        result: T = await self.send(body, version)
        if response_type is not None and not isinstance(result, response_type):
            raise TypeError(f"expected {response_type.__name__}, got {type(result).__name__}")
        return result

    def send_raw(self, frame: bytes) -> None:
        """Write bytes as they are (for tests of malformed input)."""
        assert self.transport is not None
        self.transport.write(frame)

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(
    host: str, port: int, client_id: str = "group-coordinator-client"
) -> KafkaConnectionClient:
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: KafkaConnectionClient(client_id), host, port)
    return protocol
