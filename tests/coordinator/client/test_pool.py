"""A request's wait in the client: a member being closed stops waiting, whatever its
connection does at the same moment."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator.client.connection import ConnectionClosed
from coordinator.client.pool import ApiVersionTable, BrokerConnection
from protocol.apis.heartbeat import HeartbeatRequest


class _Connection:
    """Stands in for a broker connection: every request gets ``answer``."""

    transport = None

    def __init__(self, answer: asyncio.Future[Any]) -> None:
        self.answer = answer

    def send(self, body: Any, version: int) -> asyncio.Future[Any]:
        return self.answer


async def test_a_request_cancelled_as_its_connection_dies_ends_cancelled() -> None:
    # A member's close cancels its heartbeat task; the daemon going away fails the request
    # in flight in the same turn of the loop. The task must end cancelled: told only of
    # the closed connection, the heartbeat loop retries, and the member never stops.
    answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    conn = BrokerConnection(("127.0.0.1", 1), _Connection(answer), ApiVersionTable({12: (0, 4)}))  # type: ignore[arg-type]
    beat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    task = asyncio.create_task(conn.call(beat, 4, timeout=30))
    await asyncio.sleep(0)  # the call waits for its answer
    answer.set_exception(ConnectionClosed("connection closed"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_request_without_an_answer_times_out() -> None:
    answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    conn = BrokerConnection(("127.0.0.1", 1), _Connection(answer), ApiVersionTable({12: (0, 4)}))  # type: ignore[arg-type]
    beat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    with pytest.raises(TimeoutError):
        await conn.call(beat, 4, timeout=0.01)
