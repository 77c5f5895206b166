"""A reply that waited (a parked JoinGroup, an answer held until its snapshot is stored)
is freed as soon as it is answered, not at the next full garbage collection: with 5,000
members joining, thousands of answered requests (the leader's with every member's
metadata) otherwise stayed in memory and made each full collection slower."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.group.config import GroupConfig
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.store import MemoryStore
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.errors import ErrorCode
from protocol.frames import Request, decode_request, encode_request


def join_request(member_id: str) -> Request:
    body = JoinGroupRequest(
        group_id="g",
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"m")],
    )
    return decode_request(encode_request(body, 9, 1, "client")[4:])


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def test_an_answered_parked_join_leaves_nothing_behind(no_collector: None) -> None:
    loop = asyncio.get_running_loop()
    settings = Settings(group=GroupConfig(initial_rebalance_delay_ms=0))
    runtime = Runtime(settings, loop, MemoryStore())
    await runtime.load()
    conn = ConnectionContext(client_host="/127.0.0.1")
    first = runtime.handle(join_request(""), conn)
    body: Any = await first if isinstance(first, asyncio.Future) else first
    assert body.error_code == ErrorCode.MEMBER_ID_REQUIRED

    reply = runtime.handle(join_request(body.member_id), conn)
    assert isinstance(reply, asyncio.Future)  # parked until the join phase completes
    answered: Any = await reply
    assert answered.error_code == ErrorCode.NONE
    assert answered.member_id == body.member_id

    gone = weakref.ref(reply)
    del reply
    await asyncio.sleep(0)  # the loop's handle that resumed this test let go of it
    assert gone() is None, "the answered request is kept alive by a reference cycle"
    runtime.shutdown()
