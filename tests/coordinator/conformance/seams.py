"""Where the conformance suite's deliberate faults go in: seams the daemon offers, so that
no fault reaches into a module's private names and refactoring the group model breaks none.

- ``Broken``: the state machine the daemon is built with (``Server(coordinator=...)``), a
  ``GroupCoordinator`` whose public calls a fault may rewrite: the request going in, the
  results coming out (every reply and query answer, including replies parked and released
  later), a call answered without the state machine, a timer that never fires. Faults see
  the groups only through the public calls and what the clients were told (``Told``).
- ``WireProxy``: a TCP proxy in front of a daemon (its advertised address), through which
  a fault rewrites, drops or refuses frames (the connection layer's behaviour).
- ``Fault.settings``: the daemon configured otherwise than the runner is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.effects import Effects
from coordinator.group.requests import HeartbeatInput, JoinGroupInput
from coordinator.group.results import (
    DescribedGroup,
    HeartbeatResult,
    JoinGroupResult,
    ListedGroup,
    OffsetFetchResult,
)
from coordinator.settings.config import Settings
from protocol.apis import BY_KEY, Api
from protocol.frames import decode_response, encode_response
from protocol.schema import Struct

# -- the calls that take no request value: what a fault sees as their request --------------


@dataclass(frozen=True)
class DeleteGroups:
    group_ids: list[str]


@dataclass(frozen=True)
class DeleteOffsets:
    group_id: str


@dataclass(frozen=True)
class FetchOffsets:
    group_id: str


@dataclass(frozen=True)
class DescribeGroups:
    group_ids: list[str]


@dataclass(frozen=True)
class ListGroups:
    pass


Proceed = Callable[[Any], Effects[Any]]


class Fault:
    """A deliberately broken behaviour; each hook is the identity unless overridden."""

    def settings(self, settings: Settings) -> Settings:
        """The daemon's settings (the runner is told the real ones)."""
        return settings

    def request(self, co: Broken, req: Any) -> Any:
        """The request the state machine gets instead of ``req``."""
        return req

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        """Carry out the call: ``proceed(req)`` is the state machine's; ``co.answer``
        answers without it."""
        return proceed(req)

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        """What the client is told instead of ``result`` (``req``: its request; None for a
        reply whose request is not known)."""
        return result

    def fires(self, co: Broken, key: str) -> bool:
        """Whether the timer ``key`` fires when due (False: it never does)."""
        return True

    # -- the wire (through a ``WireProxy``) ---------------------------------------------------

    #: Whether the daemon must be reached through a ``WireProxy``.
    wire = False

    def client_frame(self, api_key: int, version: int, frame: bytes) -> bytes | Close | None:
        """A request frame (without its size): passed on as returned; None: dropped (never
        answered); ``CLOSE``: the connection closes."""
        return frame

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        """A response body to rewrite: (the version to encode it at, the body); None: as
        it is."""
        return None


@dataclass
class Told:
    """What the clients were told, per group and member (before a fault rewrote it)."""

    generation: dict[str, int] = field(default_factory=dict)
    leader: dict[str, str] = field(default_factory=dict)
    protocols: dict[str, list[tuple[str, bytes]]] = field(default_factory=dict)  # by member
    instance_of: dict[str, str] = field(default_factory=dict)  # member -> instance
    member_of_instance: dict[tuple[str, str], str] = field(default_factory=dict)
    epoch: dict[str, int] = field(default_factory=dict)  # KIP-848 member -> epoch
    topics: dict[str, list[str]] = field(default_factory=dict)  # KIP-848 member -> topics

    def saw(self, req: Any, result: Any) -> None:
        if isinstance(result, JoinGroupResult) and isinstance(req, JoinGroupInput):
            if result.error_code == 0:
                self.generation[req.group_id] = result.generation_id
                self.leader[req.group_id] = result.leader
                self.protocols[result.member_id] = req.protocols
                if req.group_instance_id is not None:
                    self.instance_of[result.member_id] = req.group_instance_id
                    key = (req.group_id, req.group_instance_id)
                    self.member_of_instance[key] = result.member_id
        elif (
            isinstance(result, ConsumerHeartbeatResult)
            and isinstance(req, ConsumerHeartbeatInput)
            and result.error_code == 0
        ):
            member = result.member_id or req.member_id
            self.epoch[member] = result.member_epoch
            if req.subscribed_topic_names is not None:
                self.topics[member] = list(req.subscribed_topic_names)
            if req.instance_id is not None and result.member_epoch > 0:
                self.member_of_instance[(req.group_id, req.instance_id)] = member


class Broken(GroupCoordinator[Any]):
    """The state machine with a ``Fault`` in its public calls."""

    def __init__(self, fault: Fault, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fault = fault
        self.told = Told()
        self.topic_partitions: Callable[[str], int] = kwargs.get("topic_partitions", lambda _t: 0)
        self._asked: dict[Any, Any] = {}  # token -> request, until its reply
        #: The clock reading of the call in progress.
        self.now = 0
        #: Effects of requests a fault sent on its own while a timer fired (``also``).
        self.pending: list[Effects[Any]] = []

    # -- for faults --------------------------------------------------------------------------

    def answer(self, token: object, result: object) -> Effects[Any]:
        """Effects that answer ``token`` with ``result``, the state machine not asked."""
        effects: Effects[Any] = Effects()
        effects.reply(token, result)
        return effects

    def state(self, group_id: str) -> str:
        (described,) = GroupCoordinator.describe_groups(self, [group_id])
        return described.group_state

    def described(self, group_id: str) -> DescribedGroup:
        (described,) = GroupCoordinator.describe_groups(self, [group_id])
        return described

    def also(self, method: Callable[..., Effects[Any]], req: Any, now_ms: int) -> Effects[Any]:
        """Send one more request to the state machine (its reply goes nowhere)."""
        token = object()
        effects = method(token, req, now_ms)
        effects.replies = [(t, r) for t, r in effects.replies if t is not token]
        return effects

    # -- the seam ------------------------------------------------------------------------------

    def _told(self, effects: Effects[Any]) -> Effects[Any]:
        if effects.replies:
            replies = []
            for token, result in effects.replies:
                req = self._asked.pop(token, None)
                self.told.saw(req, result)
                replies.append((token, self.fault.result(self, req, result)))
            effects.replies = replies
        return effects

    def _call(
        self, method: Callable[..., Effects[Any]], token: Any, req: Any, now_ms: int
    ) -> Effects[Any]:
        self.now = now_ms
        req = self.fault.request(self, req)
        self._asked[token] = req
        effects = self.fault.call(self, token, req, lambda r: method(token, r, now_ms))
        return self._told(effects)

    def join_group(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().join_group, token, req, now_ms)

    def sync_group(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().sync_group, token, req, now_ms)

    def heartbeat(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().heartbeat, token, req, now_ms)

    def heartbeat_now(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> tuple[int, str | None, int]:
        timer: list[tuple[str | None, int]] = [(None, 0)]

        def beat(token: Any, req: HeartbeatInput, now: int) -> Effects[Any]:
            error, key, deadline = GroupCoordinator.heartbeat_now(
                self, req.group_id, req.generation_id, req.member_id, req.group_instance_id, now
            )
            timer[0] = (key, deadline)
            return self.answer(token, HeartbeatResult(error))

        token = object()
        req = HeartbeatInput(group_id, generation_id, member_id, group_instance_id)
        effects = self._call(beat, token, req, now_ms)
        ((_, result),) = effects.replies
        return int(result.error_code), *timer[0]

    def leave_group(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().leave_group, token, req, now_ms)

    def commit_offsets(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().commit_offsets, token, req, now_ms)

    def consumer_group_heartbeat(self, token: Any, req: Any, now_ms: int) -> Effects[Any]:
        return self._call(super().consumer_group_heartbeat, token, req, now_ms)

    def steady_consumer_heartbeat(self, *args: Any) -> None:
        """The consumer heartbeat lane's call, declined: every ConsumerGroupHeartbeat goes
        through ``consumer_group_heartbeat``, where faults see it."""
        return None

    def delete_groups(self, token: Any, group_ids: list[str], now_ms: int) -> Effects[Any]:
        def delete(token: Any, req: DeleteGroups, now: int) -> Effects[Any]:
            return GroupCoordinator.delete_groups(self, token, req.group_ids, now)

        return self._call(delete, token, DeleteGroups(group_ids), now_ms)

    def delete_offsets(
        self, token: Any, group_id: str, topics: list[tuple[str, list[int]]], now_ms: int
    ) -> Effects[Any]:
        def delete(token: Any, req: DeleteOffsets, now: int) -> Effects[Any]:
            return GroupCoordinator.delete_offsets(self, token, req.group_id, topics, now)

        return self._call(delete, token, DeleteOffsets(group_id), now_ms)

    def fetch_offsets(self, group_id: str, *args: Any, **kwargs: Any) -> OffsetFetchResult:
        result = super().fetch_offsets(group_id, *args, **kwargs)
        answer: OffsetFetchResult = self.fault.result(self, FetchOffsets(group_id), result)
        return answer

    def describe_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        result = super().describe_groups(group_ids)
        answer: list[DescribedGroup] = self.fault.result(self, DescribeGroups(group_ids), result)
        return answer

    def list_groups(self, states_filter: list[str], types_filter: list[str]) -> list[ListedGroup]:
        result = super().list_groups(states_filter, types_filter)
        answer: list[ListedGroup] = self.fault.result(self, ListGroups(), result)
        return answer

    def fire_timer(self, key: str, now_ms: int) -> Effects[Any]:
        self.now = now_ms
        if not self.fault.fires(self, key):
            return Effects()
        effects = super().fire_timer(key, now_ms)
        if self.pending:
            effects = merged(*self.pending, effects)
            self.pending = []
        return self._told(effects)

    def written(self, records: Any, ok: bool, now_ms: int) -> Effects[Any]:
        return self._told(super().written(records, ok, now_ms))

    def shutdown(self) -> Effects[Any]:
        return self._told(super().shutdown())


def merged(*parts: Effects[Any]) -> Effects[Any]:
    """The effects of several calls, in order."""
    out: Effects[Any] = Effects()
    for part in parts:
        out.replies += part.replies
        out.timers += part.timers
        out.records += part.records
        out.events += part.events
    return out


# -- the wire ---------------------------------------------------------------------------------


class Close:
    """``Fault.client_frame``'s answer: close the client's connection."""


CLOSE = Close()
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id


class WireProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream``, frames passing through ``fault``.

    Give the daemon the proxy's address as its advertised listener, so that clients sent
    elsewhere (FindCoordinator, Metadata) come back through it."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        self.upstream: tuple[str, int] | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None and self.upstream is not None
        self._tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        asked: dict[int, tuple[int, int]] = {}  # correlation id -> (api key, version)
        back = asyncio.create_task(self._responses(up_reader, writer, asked))
        try:
            while True:
                frame = await _read_frame(reader)
                if frame is None:
                    break
                api_key, version, correlation_id = _HEADER.unpack_from(frame)
                passed = self.fault.client_frame(api_key, version, frame)
                if passed is CLOSE:
                    break
                if passed is None:
                    continue
                assert isinstance(passed, bytes)
                asked[correlation_id] = (api_key, version)
                up_writer.write(_SIZE.pack(len(passed)) + passed)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            back.cancel()
            for w in (writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _responses(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        asked: dict[int, tuple[int, int]],
    ) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                frame = await _read_frame(reader)
                if frame is None:
                    writer.close()
                    return
                (correlation_id,) = _SIZE.unpack_from(frame)
                api_key, version = asked.pop(correlation_id, (-1, -1))
                api = BY_KEY.get(api_key)  # type: ignore[call-overload]
                data = _SIZE.pack(len(frame)) + frame
                if api is not None:
                    _, body = decode_response(api, version, frame)
                    rewritten = self.fault.response(api, version, body)
                    if rewritten is not None:
                        data = encode_response(api, rewritten[0], correlation_id, rewritten[1])
                writer.write(data)


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """A frame without its size; None at the end of the stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError:
        return None
    (length,) = _SIZE.unpack(head)
    return await reader.readexactly(length)
