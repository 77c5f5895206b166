"""The project's KIP-848 member (``ConsumerGroupMember``) against the in-process daemon:
server-side assignment, revocation callbacks for what moves only, leaving, commits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from coordinator.client import ConsumerGroupMember, GroupAdmin
from coordinator.group.config import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server

ALL = [("t", p) for p in range(12)]


@pytest.fixture
async def bootstrap() -> AsyncIterator[str]:
    """A daemon whose consumer groups heartbeat every 100 ms (members learn of changes on
    their next heartbeat)."""
    fast = ConsumerGroupConfig(heartbeat_interval_ms=100, min_heartbeat_interval_ms=50)
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            topics=(("t", 12),),
            group=GroupConfig(consumer=fast),
        )
    )
    await srv.start()
    yield f"127.0.0.1:{srv.port}"
    await srv.stop()


async def until(predicate: object, timeout_s: float = 5.0) -> None:
    async def poll() -> None:
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout_s)


def owned(m: ConsumerGroupMember) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in m.assignment.items() for p in ps}


async def test_two_members_share_the_topic_and_one_takes_over(bootstrap: str) -> None:
    revoked: list[tuple[str, int]] = []
    a = ConsumerGroupMember(bootstrap, "kip848-client", ["t"], on_revoked=revoked.extend)
    await a.start()
    assert owned(a) == set(ALL) and a.member_epoch == 1
    b = ConsumerGroupMember(bootstrap, "kip848-client", ["t"])
    await b.start()
    await until(lambda: len(owned(a)) == 6 and len(owned(b)) == 6)
    assert owned(a) | owned(b) == set(ALL)
    assert sorted(revoked) == sorted(owned(b))  # a revoked exactly what b took
    await a.commit({("t", sorted(owned(a))[0][1]): 17})
    async with GroupAdmin(bootstrap) as admin:
        committed = await admin.committed_offsets("kip848-client")
    assert [o.offset for o in committed.values()] == [17]
    await a.close()
    await until(lambda: owned(b) == set(ALL))
    await b.close()


async def test_a_regex_member_and_a_static_member(bootstrap: str) -> None:
    m = ConsumerGroupMember(bootstrap, "kip848-static", regex="^t$", instance_id="i-1")
    await m.start()
    assert owned(m) == set(ALL)
    await m.close()  # epoch -2: the instance's assignment waits for it
    back = ConsumerGroupMember(bootstrap, "kip848-static", regex="^t$", instance_id="i-1")
    await back.start()
    assert owned(back) == set(ALL) and back.member_id != m.member_id
    await back.close()
