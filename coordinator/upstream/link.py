"""One connection to an upstream broker (I/O): frames out with correlation ids of its own,
answers matched back by them, TLS and SASL as the daemon's upstream settings say.

Requests are written at once (pipelined) and the upstream answers them in order; a request
not answered in its time fails alone with ``UpstreamTimeout`` and the link is closed (what
comes later on it is out of date), failing what else waits on it with ``UpstreamClosed``.
Bytes that are not Kafka frames close the link the same way. Nothing here blocks the loop.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

import structlog

from protocol.apis import BY_KEY
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import DecodeError, ErrorCode
from protocol.frames import FrameSplitter, decode_response, encode_request
from protocol.schema import Struct

from . import wire
from .settings import UpstreamSettings

log = structlog.get_logger("upstream")

#: The largest answer taken from an upstream (a Fetch's max bytes is the client's).
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class UpstreamError(Exception):
    """The upstream did not answer a request (the request is answered with an error)."""


class UpstreamTimeout(UpstreamError):
    pass


class UpstreamClosed(UpstreamError):
    pass


class Link(asyncio.Protocol):
    def __init__(
        self,
        address: tuple[str, int],
        settings: UpstreamSettings,
        on_closed: Callable[[Link], None] | None = None,
    ) -> None:
        self.address = address
        self._settings = settings
        self._loop = asyncio.get_running_loop()
        self._on_closed = on_closed
        self._splitter = FrameSplitter(MAX_RESPONSE_BYTES)
        self._pending: dict[int, tuple[Answer, asyncio.TimerHandle | None]] = {}
        self._next_id = 0
        self._transport: asyncio.Transport | None = None
        self._held: list[bytes] = []  # written once connected and authenticated
        self.ready = False
        self.closed = False
        #: Called once when the last pending answer is in (a pool waiting to take the
        #: link back): None otherwise.
        self.on_idle: Callable[[Link], None] | None = None
        self._opening = self._loop.create_task(self._open())

    # -- what the pool and the proxy call -------------------------------------------------

    @property
    def idle(self) -> bool:
        return not self._pending and not self.closed

    def send(self, frame: bytes, timeout_s: float) -> asyncio.Future[bytes]:
        """Forward a client's request frame (without size prefix): its answer, the
        upstream's response frame (without size prefix, with our correlation id)."""
        correlation_id = self._correlation()
        answer: asyncio.Future[bytes] = self._loop.create_future()
        if self.closed:
            answer.set_exception(UpstreamClosed(f"upstream {self._where} is closed"))
            return answer
        timer = self._loop.call_later(timeout_s, self._timed_out, correlation_id)
        self._pending[correlation_id] = (answer, timer)
        self._write(wire.readdressed_request(frame, correlation_id))
        return answer

    def send_then(self, frame: bytes, timeout_s: float, then: Then) -> None:
        """As ``send``, with ``then(answer, None)`` or ``then(None, error)`` called as soon
        as the answer is read (no loop iteration in between: the forwarding hot path)."""
        answer = _Called(then)
        if self.closed:
            answer.set_exception(UpstreamClosed(f"upstream {self._where} is closed"))
            return
        correlation_id = self._correlation()
        timer = self._loop.call_later(timeout_s, self._timed_out, correlation_id)
        self._pending[correlation_id] = (answer, timer)
        self._write(wire.readdressed_request(frame, correlation_id))

    def send_unanswered(self, frame: bytes) -> None:
        """A request the upstream does not answer (Produce with acks=0)."""
        if not self.closed:
            self._write(wire.readdressed_request(frame, self._correlation()))

    async def request(self, body: Struct, version: int, timeout_s: float) -> Struct:
        """A request of the daemon's own (ApiVersions, Metadata, ListOffsets for lag)."""
        assert body.kafka is not None and body.kafka.api_key is not None
        api = BY_KEY[body.kafka.api_key]
        frame = encode_request(body, version, 0, "group-coordinator")[4:]
        answer = await self.send(frame, timeout_s)
        return decode_response(api, version, answer)[1]

    def close(self) -> None:
        self._fail_all(UpstreamClosed(f"upstream {self._where} connection closed"))
        if self._transport is not None:
            self._transport.close()
        elif not self._opening.done():
            self._opening.cancel()

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._splitter.feed(data)
        except DecodeError as exc:
            log.warning(
                "upstream sent what is not a Kafka frame", upstream=self._where, error=str(exc)
            )
            self.close()
            return
        for frame in frames:
            if len(frame) < 4:
                log.warning("upstream sent a frame too short to answer", upstream=self._where)
                self.close()
                return
            entry = self._pending.pop(wire.response_correlation(frame), None)
            if entry is None:
                continue  # an answer to a request that timed out
            answer, timer = entry
            if timer is not None:
                timer.cancel()
            if not answer.done():
                answer.set_result(frame)
        if not self._pending and self.on_idle is not None:
            on_idle, self.on_idle = self.on_idle, None
            on_idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail_all(UpstreamClosed(f"upstream {self._where} closed the connection"))

    # -- internals --------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return "{}:{}".format(*self.address)

    def _correlation(self) -> int:
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        return self._next_id

    def _write(self, data: bytes) -> None:
        if self.ready and self._transport is not None:
            self._transport.write(data)
        else:
            self._held.append(data)

    def _timed_out(self, correlation_id: int) -> None:
        entry = self._pending.pop(correlation_id, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(
                UpstreamTimeout(f"upstream {self._where} did not answer in time")
            )
        # What the upstream says from now on on this link answers stale requests.
        self.close()

    def _fail_all(self, exc: UpstreamError) -> None:
        if self.closed:
            return
        self.closed = True
        pending, self._pending = self._pending, {}
        for answer, timer in pending.values():
            if timer is not None:
                timer.cancel()
            if not answer.done():
                answer.set_exception(exc)
        self._held.clear()
        if self._on_closed is not None:
            self._on_closed(self)

    async def _open(self) -> None:
        settings = self._settings
        host, port = self.address
        tls = client_tls(settings) if settings.security_protocol.uses_tls else None
        try:
            await asyncio.wait_for(
                self._loop.create_connection(
                    lambda: self, host, port, ssl=tls, server_hostname=host if tls else None
                ),
                settings.connect_timeout_ms / 1000,
            )
            if settings.security_protocol.uses_sasl:
                await self._authenticate()
        except asyncio.CancelledError:
            self._fail_all(UpstreamClosed(f"upstream {self._where}: connection given up"))
            raise
        except Exception as exc:  # refused, timed out, TLS, a login refused or garbled
            reason = str(exc) or type(exc).__name__
            self._fail_all(UpstreamClosed(f"cannot reach upstream {self._where}: {reason}"))
            if self._transport is not None:
                self._transport.abort()
            return
        self.ready = True
        held, self._held = self._held, []
        if held and self._transport is not None:
            self._transport.write(b"".join(held))

    async def _authenticate(self) -> None:
        """SaslHandshake v1 and SaslAuthenticate, before any client's request."""
        settings = self._settings
        timeout_s = settings.request_timeout_ms / 1000
        mechanism = settings.sasl_mechanism
        self.ready = True  # the login's own frames go out at once; clients' wait in _held
        held, self._held = self._held, []
        try:
            shake = await self.request(SaslHandshakeRequest(mechanism=mechanism), 1, timeout_s)
            assert isinstance(shake, SaslHandshakeResponse)
            if shake.error_code != ErrorCode.NONE:
                raise UpstreamClosed(
                    f"upstream {self._where} does not take SASL {mechanism}"
                    f" (it offers {', '.join(shake.mechanisms)})"
                )
            for token in sasl_tokens(settings):
                answer = await self.request(
                    SaslAuthenticateRequest(auth_bytes=token.send()), 1, timeout_s
                )
                assert isinstance(answer, SaslAuthenticateResponse)
                if answer.error_code != ErrorCode.NONE:
                    raise UpstreamClosed(
                        f"upstream {self._where} refused the daemon's login:"
                        f" {answer.error_message or ErrorCode(answer.error_code).name}"
                    )
                token.received(answer.auth_bytes)
        finally:
            self.ready = False
            self._held = held + self._held


#: What ``send_then`` calls with the answer frame, or with the error.
Then = Callable[[bytes | None, BaseException | None], None]


class _Called:
    """An answer delivered by calling back at once (a future's callbacks wait a turn)."""

    __slots__ = ("_done", "_then")

    def __init__(self, then: Then) -> None:
        self._then = then
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, frame: bytes) -> None:
        self._done = True
        self._then(frame, None)

    def set_exception(self, exc: BaseException) -> None:
        self._done = True
        self._then(None, exc)


Answer = asyncio.Future[bytes] | _Called


def client_tls(settings: UpstreamSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cafile=str(settings.tls_ca) if settings.tls_ca is not None else None
    )
    context.check_hostname = settings.tls_check_hostname
    return context


class _Step:
    """One SASL client message, and what to do with the server's answer."""

    def __init__(self, send: Callable[[], bytes], received: Callable[[bytes], None]) -> None:
        self.send = send
        self.received = received


def sasl_tokens(settings: UpstreamSettings) -> list[_Step]:
    """The daemon's SASL client messages for its upstream login (PLAIN, SCRAM-SHA-*)."""
    user = settings.sasl_username or ""
    password = settings.sasl_password or ""
    if settings.sasl_mechanism == "PLAIN":
        return [_Step(lambda: f"\0{user}\0{password}".encode(), lambda _answer: None)]
    import scramp

    client = scramp.ScramClient([settings.sasl_mechanism], user, password)
    return [
        _Step(
            lambda: client.get_client_first().encode(),
            lambda a: client.set_server_first(a.decode()),
        ),
        _Step(
            lambda: client.get_client_final().encode(),
            lambda a: client.set_server_final(a.decode()),
        ),
    ]
