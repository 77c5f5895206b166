"""A TCP proxy on 127.0.0.1 that the test harness owns, between a daemon and PostgreSQL,
to stall the daemon's database connections the way a silent network fault does: the
proxy stops forwarding (nothing is closed, nothing is refused; both ends just wait).

It can also act at an exact point of the daemon's work: ``arm(label, action)`` runs
``action`` once the daemon has asked the server to execute the first statement with
parameters (an extended-protocol Bind and Execute; asyncpg's own type lookups have none)
on the connection that sent the first statement whose text holds ``label`` (the daemon
labels its transactions' BEGIN, ``store/bounded.py``). Armed with ``b"-- write"``, the
action runs while a write transaction holds its fencing share lock: ``freeze`` or a
SIGSTOP of the daemon there is a node stalled mid-transaction.

It runs its own event loop in a thread, so it keeps working while the test blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

#: An Execute message of the unnamed portal, all rows (asyncpg's bind-and-execute).
_EXECUTE = b"E\x00\x00\x00\x09\x00\x00\x00\x00\x00"


class FaultProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.port = 0
        self.frozen = threading.Event()
        self._armed: tuple[bytes, Callable[[], None]] | None = None
        self._labelled: object | None = None  # the connection that sent the label
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()  # both ends of every link
        self._thread.start()
        self._ready.wait(10)

    def url(self, database_url: str) -> str:
        """``database_url`` (a postgresql:// URL to the target) through this proxy."""
        host, port = self.target
        return database_url.replace(f"{host}:{port}", f"127.0.0.1:{self.port}")

    def freeze(self) -> None:
        self.frozen.set()

    def thaw(self) -> None:
        self.frozen.clear()

    def arm(self, label: bytes, action: Callable[[], None]) -> None:
        self._armed = (label, action)
        self._labelled = None

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # -- the proxy's own thread --------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        # Closed means gone: a daemon sees its connections reset (instead of waiting on them
        # until it is killed) and PostgreSQL's backends end (a shutdown waits for them).
        for writer in self._writers:
            writer.transport.abort()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while self.frozen.is_set():  # a new connection hangs as the old ones do
            await asyncio.sleep(0.05)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pump(reader, up_writer, upstream=True, link=writer),
            self._pump(up_reader, writer, upstream=False),
            return_exceptions=True,
        )

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: bool,
        link: object = None,
    ) -> None:
        try:
            while data := await reader.read(65536):
                while self.frozen.is_set():
                    await asyncio.sleep(0.05)  # held, never delivered while frozen
                writer.write(data)
                await writer.drain()
                if upstream:
                    self._watch(data, link)
        except (OSError, asyncio.IncompleteReadError):
            pass
        if not self.frozen.is_set():  # a frozen link carries no FIN either
            with contextlib.suppress(OSError):
                writer.close()

    def _watch(self, data: bytes, link: object) -> None:
        if self._armed is None:
            return
        label, action = self._armed
        if self._labelled is link and _EXECUTE in data and _binds_parameters(data):
            self._armed = None
            action()
        elif self._labelled is None and label in data:
            self._labelled = link


def _binds_parameters(data: bytes) -> bool:
    """Whether ``data`` starts with a Bind message that passes at least one parameter."""
    if data[:1] != b"B":
        return False
    at = data.index(b"\x00", 5) + 1  # past the portal name
    at = data.index(b"\x00", at) + 1  # past the statement name
    formats = int.from_bytes(data[at : at + 2], "big")
    at += 2 + 2 * formats
    return int.from_bytes(data[at : at + 2], "big") > 0
