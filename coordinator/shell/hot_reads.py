"""Hot connections: reads answered straight off the socket by the compiled heartbeat lane.

A connection whose every read the compiled lane answers whole (a client pipelining
heartbeats) spends most of the daemon's time for it in the event loop's stream machinery:
a bytes object and a Python callback per read, then a transport write. So after
``HOT_AFTER_READS`` such reads in a row the connection goes hot: its transport stops
reading, and the loop calls a ``Reader`` (``fastlane/_heartbeats.c``) on a dup of its
socket, which reads, answers and writes in C as ``HeartbeatBatch.answer_read`` does. It
reads the loop's clock as ``LoopClock`` does; the bookkeeping after a read (the counts,
client id and metrics of ``HeartbeatBatch.told``, the idle clock) is done per read when
the daemon keeps metrics (``tally``, timed per read as there), and otherwise owed until
``settle``: before the idle sweep looks, and when the connection cools. A Python call per
read was a third of a hot read's time in user space.

The first read it cannot answer whole hands the connection back (``leave``): the answers
the socket did not take go to the transport first, the bytes not answered go the usual
way (``data_received``), and the transport reads again. The end of the stream and socket
errors are handed back with nothing, for the transport to find on its next read. A
connection goes hot only when nothing of it is waiting anywhere (nothing queued, parked,
committing or buffered for writing), on a plain TCP listener, where the walker may answer
at all (no ACLs, one node): ``data_received`` hands the compiled lane reads only then, and
``heat`` checks the transport; closing it cools it first.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Protocol

import structlog

from protocol.frames import FrameSplitter

from ..handlers.connection_context import ConnectionContext
from ..security.config import Listener
from ..shared.clock import LoopClock
from .runtime import Runtime

log = structlog.get_logger("server")

#: Reads in a row answered whole by the compiled lane before a connection goes hot: a
#: client that mixes in other requests stays with the transport, as handing over costs
#: a few system calls each way.
HOT_AFTER_READS = 8


class KafkaConnection(Protocol):
    """What of the server's connection (``server.KafkaConnection``) hot reads use."""

    runtime: Runtime
    transport: asyncio.Transport | None
    ctx: ConnectionContext
    splitter: FrameSplitter
    listener: Listener | None
    closed: bool
    last_activity: float

    def data_received(self, data: bytes) -> None: ...
    def cool(self) -> None: ...
    def close(self) -> None: ...


class HotReads:
    """One hot connection's reader, registered with the loop until ``cool``."""

    def __init__(self, conn: KafkaConnection, fd: int) -> None:
        runtime = conn.runtime
        batch = runtime.heartbeat_batch
        assert batch is not None
        self.conn = conn
        self._batch = batch
        self._loop = runtime.loop
        clock = runtime.clock
        loop_clock = type(clock) is LoopClock  # else its own now_ms, whatever it reads
        owed = loop_clock and runtime.metrics is None
        self.reader: Any = batch.reader(
            fd,
            conn.ctx,
            self._loop.time if loop_clock else clock.now_ms,
            clock.offset_ms if loop_clock else None,
            conn.splitter.max_frame_bytes,
            None if owed else self._tally,
            self._leave,
        )

    def _tally(self, answered: int, consumers: int, started: float) -> None:
        conn = self.conn
        conn.last_activity = self._loop.time()
        self._batch.told(conn.ctx, answered, consumers, started, conn.runtime.metrics)

    def _leave(self, rest: bytes, unsent: bytes, error: BaseException | None) -> None:
        conn = self.conn
        conn.cool()
        if error is not None:
            log.error("request failed", api="Heartbeat", exc_info=error)
            conn.close()
            return
        if unsent and conn.transport is not None:
            conn.transport.write(unsent)  # before anything answered after them
        if rest:
            conn.data_received(rest)

    def settle(self) -> None:
        """Book what the reader answered since the last settle (without ``tally``)."""
        answered, consumers, client, last_read = self.reader.settle()
        if answered or consumers:
            self._batch.settled(self.conn.ctx, answered, consumers, client)
            self.conn.last_activity = max(self.conn.last_activity, last_read)

    def stop(self) -> None:
        """Settle, stop watching the socket, then close the reader's dup of it (in this
        order: epoll keeps reporting a closed dup while the transport's descriptor is
        open)."""
        self.settle()
        fd = self.reader.fd
        if fd >= 0:
            self._loop.remove_reader(fd)
            self.reader.close()


def heat(conn: KafkaConnection) -> HotReads | None:
    """Make ``conn`` hot, if it may be. Called only after a read the compiled lane
    answered whole, which ``data_received`` hands it only with nothing queued, parked or
    committing, authenticated, with no upstream: what is left to check is the transport
    (open, plain TCP, nothing unsent), and that admission checks nothing (no ACLs, one
    node: the hot reader checks neither; ``data_received``'s walks check both)."""
    runtime, transport = conn.runtime, conn.transport
    if transport is None or conn.closed or transport.is_closing():
        return None
    node = runtime.node
    if node.security.acls_enabled or node.routing.clustered:
        return None  # the reader's walks check no admission: data_received's do
    if conn.listener is not None and conn.listener.protocol.uses_tls:
        return None
    if transport.get_extra_info("sslcontext") is not None or transport.get_write_buffer_size():
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    hot = HotReads(conn, os.dup(sock.fileno()))
    transport.pause_reading()
    runtime.loop.add_reader(hot.reader.fd, hot.reader.readable)
    return hot
