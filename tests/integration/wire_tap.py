"""A Kafka-aware TCP relay on 127.0.0.1, owned by the test, between clients and a daemon
that advertises the relay's address (so every connection a client makes goes through it).

It reads the frames both ways (the protocol package decodes them): it records each
OffsetCommit request with its answer, and it can hold the answer to one
ConsumerGroupHeartbeat back from one client (by client id) — the first whose member epoch
is above a given one — until the client has sent an OffsetCommit behind it. The daemon has then
moved the member to the new epoch while the client still commits with the old one: the
order KIP-1251 is about, made certain instead of left to a race. Its own event loop runs
in a thread, so it keeps working while the test blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from dataclasses import dataclass, field

from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from protocol.apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from protocol.frames import decode_request, decode_response

CONSUMER_GROUP_HEARTBEAT = 68
OFFSET_COMMIT = 8
#: A held answer goes to the client after this at the latest (a client that never commits
#: must not wait out its request timeout).
HOLD_LIMIT_S = 30.0


@dataclass
class Commit:
    """One OffsetCommit through the relay: its epoch, and each partition's answer."""

    member_epoch: int
    partitions: list[tuple[str, int, int]]  # (topic, partition, offset)
    errors: dict[tuple[str, int], int] = field(default_factory=dict)  # filled when answered


#: A request on its way: (api key, version, client id, the commit it is).
Asked = tuple[int, int, str, "Commit | None"]


class WireTap:
    def __init__(self) -> None:
        self.target: tuple[str, int] | None = None
        self.port = 0
        self.commits: list[Commit] = []
        #: Set when an answer is held: (the epoch the client was still at, the held one's).
        self.holding = threading.Event()
        self.held_epochs: tuple[int, int] | None = None
        #: The last member epoch each client (by client id) was answered.
        self.epochs: dict[str, int] = {}
        self._hold: tuple[str, int] | None = None
        self._release: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def hold_next_epoch_above(self, client_id: str, epoch: int) -> None:
        """Hold the first ConsumerGroupHeartbeat answer to ``client_id`` with a member
        epoch above ``epoch`` until an OffsetCommit request has gone to the daemon after it."""
        self._hold = (client_id, epoch)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # -- the relay's own thread ----------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._release = asyncio.Event()
        server = self._loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # the relay closing
            await self._relay(reader, writer)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self.target is not None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        asked: dict[int, Asked] = {}  # correlation id -> request
        await asyncio.gather(
            self._requests(reader, up_writer, asked),
            self._answers(up_reader, writer, asked),
            return_exceptions=True,
        )
        for w in (writer, up_writer):
            w.transport.abort()
            self._writers.discard(w)

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        asked: dict[int, Asked],
    ) -> None:
        while True:
            frame = await _frame(reader)
            key, version, correlation_id = struct.unpack_from(">hhi", frame)
            commit = None
            client_id = ""
            if key in (OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT):
                decoded = decode_request(frame)
                client_id = decoded.header.client_id or ""
                request = decoded.body
            if key == OFFSET_COMMIT:
                assert isinstance(request, OffsetCommitRequest)
                commit = Commit(
                    request.generation_id_or_member_epoch,
                    [
                        (t.name, p.partition_index, p.committed_offset)
                        for t in request.topics
                        for p in t.partitions
                    ],
                )
                self.commits.append(commit)
            asked[correlation_id] = (key, version, client_id, commit)
            writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()
            if commit is not None and self.holding.is_set():
                assert self._release is not None
                self._release.set()  # the commit is on its way: the held answer may follow

    async def _answers(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        asked: dict[int, Asked],
    ) -> None:
        while True:
            frame = await _frame(reader)
            (correlation_id,) = struct.unpack_from(">i", frame)
            key, version, client_id, commit = asked.pop(correlation_id, (-1, -1, "", None))
            if key == OFFSET_COMMIT and commit is not None:
                _, body = decode_response(BY_KEY[key], version, frame)
                assert isinstance(body, OffsetCommitResponse)
                commit.errors = {
                    (t.name, p.partition_index): p.error_code
                    for t in body.topics
                    for p in t.partitions
                }
            elif key == CONSUMER_GROUP_HEARTBEAT:
                _, body = decode_response(BY_KEY[key], version, frame)
                assert isinstance(body, ConsumerGroupHeartbeatResponse)
                await self._maybe_hold(client_id, body.member_epoch)
            writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()

    async def _maybe_hold(self, client_id: str, epoch: int) -> None:
        before = self.epochs.get(client_id, -1)
        if epoch > 0:
            self.epochs[client_id] = epoch
        if self._hold is None or self._hold[0] != client_id or epoch <= self._hold[1]:
            return
        self._hold = None
        assert self._release is not None
        self._release.clear()
        self.held_epochs = (before, epoch)
        self.holding.set()
        try:
            await asyncio.wait_for(self._release.wait(), HOLD_LIMIT_S)
        except TimeoutError:
            pass
        finally:
            self.holding.clear()


async def _frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)
