"""A TCP relay on 127.0.0.1 between the daemon and its upstream broker, owned by the test,
that plays the upstream's faults: down (connections refused and cut), stalled (nothing
forwarded), answering garbage, or closing halfway through an answer.

It binds first, so the broker can be told to advertise the relay's address (every
connection the daemon makes to the upstream then goes through it). Its own event loop runs
in a thread, so it keeps working while the test blocks.
"""

from __future__ import annotations

import asyncio
import threading

MODES = ("pass", "down", "stall", "garbage", "cut")


class UpstreamRelay:
    def __init__(self) -> None:
        self.target: tuple[str, int] | None = None
        self.mode = "pass"
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def set_mode(self, mode: str) -> None:
        assert mode in MODES
        self.mode = mode
        if mode == "down":
            self._loop.call_soon_threadsafe(self._cut_all)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._cut_all()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def _cut_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "down" or self.target is None:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(
            self._pump(reader, up_writer, towards_upstream=True),
            self._pump(up_reader, writer, towards_upstream=False),
            return_exceptions=True,
        )
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.transport.abort()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, towards_upstream: bool
    ) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                writer.transport.abort()
                return
            while self.mode == "stall":
                await asyncio.sleep(0.05)
            if self.mode == "down":
                writer.transport.abort()
                return
            if not towards_upstream and self.mode == "garbage":
                data = b"\x7f\xff\xff\xff" + b"garbage" * 8
            elif not towards_upstream and self.mode == "cut":
                writer.write(data[: max(len(data) // 2, 1)])
                await writer.drain()
                writer.transport.abort()
                return
            writer.write(data)
            await writer.drain()
