"""One asyncio connection to a Kafka broker: send requests, await their responses.

Requests may be pipelined; responses arrive in request order (Kafka answers in order on a
connection), so each is matched with the oldest outstanding request and its correlation id
is checked.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar, cast

from protocol.apis import BY_KEY, Api
from protocol.errors import DecodeError
from protocol.frames import FrameSplitter, decode_response, encode_request
from protocol.schema import Struct

if TYPE_CHECKING:
    from .security import ClientSecurity

T = TypeVar("T", bound=Struct)


class ConnectionClosed(ConnectionError):
    pass


class NotKafka(ConnectionError):
    """The peer answered with something that is not a Kafka response (a web server, a TLS
    listener reached without TLS...); the message says which, in one line."""

    def __init__(self, peer: str, first_bytes: bytes) -> None:
        if first_bytes.startswith(b"HTTP/"):
            what = "it answered HTTP"
        elif first_bytes[:1] in (b"\x15", b"\x16") and first_bytes[1:2] == b"\x03":
            what = "it answered TLS: a TLS listener needs security.protocol=SSL or SASL_SSL"
        else:
            what = f"it answered {first_bytes[:8]!r}"
        super().__init__(f"{peer} is not a Kafka listener ({what})")


class KafkaConnectionClient(asyncio.Protocol):
    def __init__(self, client_id: str = "group-coordinator-client") -> None:
        self.client_id = client_id
        self.transport: asyncio.Transport | None = None
        self._splitter = FrameSplitter()
        self._pending: deque[tuple[int, Api, int, asyncio.Future[Any]]] = deque()
        self._correlation = itertools.count(1)
        self._closed = asyncio.Event()
        self._first_bytes: bytes | None = None  # what the peer said first, if it is no Kafka
        self._peer_name: str | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host = str(peer[0])
            self._peer_name = f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"

    def data_received(self, data: bytes) -> None:
        if self._first_bytes is None:
            self._first_bytes = bytes(data[:8])
        try:
            frames = self._splitter.feed(data)
        except DecodeError:
            # Not Kafka's framing: fail the requests with what the peer seems to be, and
            # close (rather than let the event loop print the exception).
            self._fail_all(NotKafka(self._peer(), self._first_bytes or bytes(data[:8])))
            if self.transport is not None:
                self.transport.close()
            return
        for frame in frames:
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
        if self._pending:
            # Requests unanswered: who closed on them says where to look.
            self._fail_all(ConnectionClosed(f"{self._peer()} closed the connection"))
        self._closed.set()

    def _fail_all(self, exc: Exception) -> None:
        while self._pending:
            *_, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(exc)

    def _peer(self) -> str:
        return self._peer_name or "the broker"

    @property
    def peer(self) -> str:
        """HOST:PORT of the other end, for messages."""
        return self._peer()

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
    host: str,
    port: int,
    client_id: str = "group-coordinator-client",
    security: ClientSecurity | None = None,
) -> KafkaConnectionClient:
    """A connection, over TLS and logged in with SASL as ``security`` says (by default the
    settings of this context: ``security.using``)."""
    from . import security as client_security

    security = security or client_security.current()
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(
        lambda: KafkaConnectionClient(client_id),
        host,
        port,
        ssl=security.tls,
        server_hostname=host if security.tls is not None else None,
    )
    if security.uses_sasl:
        from .sasl import authenticate

        try:
            await authenticate(protocol, security, f"{host}:{port}")
        except BaseException:
            protocol.close()
            raise
    return protocol
