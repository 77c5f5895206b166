"""The Python cost of one heartbeat, without sockets: the general path's three stages,
the heartbeat lane, and the connection around the lane.

    python -m bench.hotpath [--heartbeats 50000] [--repeats 7]

A Stable group's member sends Heartbeat v4; each stage runs in a tight loop on its own:
``decode`` (``ConnectionProtocol.receive``: the frame to a typed request, through the
connection's gate), ``handle`` (``Runtime.handle``: handler, state machine, effects) and
``encode`` (the response frame) make the general path, which every other request takes;
``lane`` is ``Runtime.answer_heartbeat`` (frame in, response frame out, timer and metrics
included); ``connection`` is ``KafkaConnection.data_received`` with 64 pipelined heartbeats
per read (framing, the drain loop, the lane, one write to a transport that discards),
per heartbeat. ``connection, ACLs`` is the same with ACLs on (the member's principal may
READ the group: the compiled walker answers what the Python lane admitted on the
connection), and ``connection, ACLs, Python lane`` the same without the compiled lane
(what every heartbeat cost with ACLs before the walker checked them). CPU time
(``time.process_time``), so a busy machine moves it less than wall time; medians and
minimums of the repeats are printed. Issue 19's target is 3 µs per heartbeat for all of
it, sockets included.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from coordinator.group.config import GroupConfig
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.security.config import ANONYMOUS, SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shared.accounts import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from coordinator.shell.connection import ConnectionProtocol
from coordinator.shell.runtime import Runtime
from coordinator.shell.server import KafkaConnection
from coordinator.store.base import SecurityRows
from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.frames import Request, encode_request, encode_response
from protocol.schema import Struct

from .metrics_overhead import stable_member


def _per_call_us(fn: Callable[[], Any], calls: int, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(calls):
            fn()
        out.append((time.process_time() - started) / calls * 1e6)
    return out


async def measure(heartbeats: int, repeats: int) -> dict[str, tuple[float, float]]:
    runtime = Runtime(
        Settings(store="memory", group=GroupConfig(initial_rebalance_delay_ms=0)),
        asyncio.get_running_loop(),
    )
    try:
        member_id, generation = await stable_member(runtime)
        body = HeartbeatRequest(group_id="bench", generation_id=generation, member_id=member_id)
        frame = encode_request(body, 4, 1, "bench")[4:]
        ctx = ConnectionContext(client_host="/127.0.0.1", client_id="bench")
        conn = ConnectionProtocol(ctx, runtime.dispatcher.supports)
        request = conn.receive(frame)
        assert isinstance(request, Request)
        reply = runtime.handle(request, ctx)
        assert isinstance(reply, Struct) and getattr(reply, "error_code", None) == 0
        stages = {
            "decode": lambda: conn.receive(frame),
            "handle": lambda: runtime.handle(request, ctx),
            "encode": lambda: conn.response(request, reply),
        }
        timings = {name: _per_call_us(fn, heartbeats, repeats) for name, fn in stages.items()}
        now = runtime.now_ms()
        assert runtime.answer_heartbeat(frame, ctx, now) == conn.response(request, reply)
        lane = _per_call_us(lambda: runtime.answer_heartbeat(frame, ctx, now), heartbeats, repeats)
        per_read = _pipelined_reads(runtime, body, heartbeats, repeats)
    finally:
        runtime.timers.cancel_all()
    result = {k: (statistics.median(v), min(v)) for k, v in timings.items()}
    result["general total"] = (
        sum(m for m, _ in result.values()),
        sum(n for _, n in result.values()),
    )
    result["lane"] = (statistics.median(lane), min(lane))
    connection = [t / PIPELINED for t in per_read]
    result["connection"] = (statistics.median(connection), min(connection))
    for name, compiled in (("connection, ACLs", True), ("connection, ACLs, Python lane", False)):
        per_read = await _with_acls(heartbeats, repeats, compiled)
        per_heartbeat = [t / PIPELINED for t in per_read]
        result[name] = (statistics.median(per_heartbeat), min(per_heartbeat))
    return result


def _pipelined_reads(
    runtime: Runtime, body: HeartbeatRequest, heartbeats: int, repeats: int, warm_reads: int = 1
) -> list[float]:
    """The µs each read of ``PIPELINED`` Heartbeat v4 frames of ``body`` takes through a
    connection's ``data_received``, after ``warm_reads`` reads untimed, whose every frame
    is asserted answered without error."""
    conn = KafkaConnection(runtime, set())
    sink = _Discard()
    conn.transport = sink  # type: ignore[assignment]
    reads = encode_request(body, 4, 1, "bench") * PIPELINED
    for _ in range(warm_reads):
        conn.data_received(reads)
    answer = encode_response(BY_KEY[12], 4, 1, HeartbeatResponse())
    assert sink.written == warm_reads * len(answer) * PIPELINED
    return _per_call_us(lambda: conn.data_received(reads), max(1, heartbeats // PIPELINED), repeats)


async def _with_acls(heartbeats: int, repeats: int, compiled: bool) -> list[float]:
    """The ``connection`` stage's reads (µs each) on a daemon with ACLs, where anyone may
    READ the group; ``compiled`` False: without the compiled lane."""
    runtime = Runtime(
        Settings(
            store="memory",
            group=GroupConfig(initial_rebalance_delay_ms=0),
            security=SecuritySettings(acls_enabled=True),
        ),
        asyncio.get_running_loop(),
    )
    allow = AclBinding(
        ANONYMOUS,
        ResourceType.GROUP,
        "bench",
        PatternType.LITERAL,
        Operation.READ,
        Permission.ALLOW,
    )
    runtime.node.security.load(SecurityRows(acls=(allow,)))
    if not compiled:
        runtime.heartbeat_batch = None
    try:
        member_id, generation = await stable_member(runtime)
        body = HeartbeatRequest(group_id="bench", generation_id=generation, member_id=member_id)
        batch = runtime.heartbeat_batch
        before = batch.answered if batch is not None else 0
        # The first read is decoded and admitted by the Python lane.
        per_read = _pipelined_reads(runtime, body, heartbeats, repeats, warm_reads=2)
        if batch is not None:  # the walker answered them, not the Python lane
            assert batch.answered - before >= heartbeats // PIPELINED * PIPELINED
        return per_read
    finally:
        runtime.timers.cancel_all()


#: Heartbeats per read in the ``connection`` stage (one loop turn of the server).
PIPELINED = 64


class _Discard:
    """A transport that counts what it is given; it has no socket, so the connection never
    goes hot (``shell/hot_reads.py``) and every read takes ``data_received``."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return 0


def main(argv: list[str] | None = None) -> dict[str, tuple[float, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heartbeats", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.heartbeats, args.repeats))
    print("| stage | µs per heartbeat (median) | min |\n|---|---:|---:|")
    for stage, (median, least) in result.items():
        print(f"| {stage} | {median:.2f} | {least:.2f} |")
    return result


if __name__ == "__main__":
    main()
