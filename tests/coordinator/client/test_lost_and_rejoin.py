"""A member that the daemon dropped or moved past: ``on_partitions_lost`` (not revoked) gets
exactly what it owned, and the member rejoins and is assigned again.

* session expiry while its heartbeats are paused -> UNKNOWN_MEMBER_ID, new member id;
* removed by an admin's batch LeaveGroup (KIP-345 member identities) -> UNKNOWN_MEMBER_ID;
* a static member that missed a rebalance stays in the group (Kafka keeps static members
  that did not rejoin) but its generation is stale -> ILLEGAL_GENERATION, same member id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import structlog

from coordinator.client import ConnectionPool, GroupMember
from coordinator.client.consumer_role import TopicPartition
from coordinator.group.config import GroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from protocol.apis.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
)
from protocol.errors import ErrorCode

from .test_group_member import partitions, settle

ALL = {("t", p) for p in range(12)}


@pytest.fixture
async def bootstrap() -> AsyncIterator[str]:
    # Short sessions are allowed so that an expiry takes a second, not Kafka's 6 s minimum.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            topics=(("t", 12),),
            group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500),
        )
    )
    await srv.start()
    yield f"127.0.0.1:{srv.port}"
    await srv.stop()
    structlog.reset_defaults()


class Callbacks:
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []

    def record(self, kind: str) -> Callable[[frozenset[TopicPartition]], None]:
        return lambda tps: self.events.append((kind, tps))

    def kwargs(self) -> dict[str, Any]:
        return {
            "on_partitions_assigned": self.record("assigned"),
            "on_partitions_revoked": self.record("revoked"),
            "on_partitions_lost": self.record("lost"),
        }

    def since(self, mark: int) -> list[tuple[str, frozenset[TopicPartition]]]:
        return self.events[mark:]


async def pause_heartbeats(member: GroupMember, seconds: float) -> None:
    """Silence the member's heartbeat task for about ``seconds`` (as a stalled process
    would be): its next sleep is long, the ones after it normal again."""
    normal = member.heartbeat_interval_s
    member.heartbeat_interval_s = seconds
    await asyncio.sleep(normal * 1.5)  # the task has started its long sleep
    member.heartbeat_interval_s = normal


async def wait_for(check: Callable[[], bool], timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.05)


def member(bootstrap: str, pool: ConnectionPool, **overrides: Any) -> GroupMember:
    settings: dict[str, Any] = {
        "protocols": ["range"],
        "topics": ["t"],
        "pool": pool,
        "heartbeat_interval_ms": 100,
        "session_timeout_ms": 1000,
        "rebalance_timeout_ms": 5000,
        **overrides,
    }
    return GroupMember(bootstrap, "g", **settings)


def _expect_lost_then_assigned(
    events: list[tuple[str, frozenset[TopicPartition]]], owned: set[TopicPartition]
) -> None:
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "lost" and events[0][1] == owned
    assert "revoked" not in kinds  # lost partitions are not revoked (nothing to commit)
    assert kinds[-1] == "assigned"


async def test_session_expiry_while_heartbeats_pause_loses_partitions_then_rejoins(
    bootstrap: str,
) -> None:
    pool = ConnectionPool()
    cb = Callbacks()
    a = member(bootstrap, pool, session_timeout_ms=10000)  # only b's session is to run out
    b = member(bootstrap, pool, **cb.kwargs())
    await a.start(10)
    await b.start(10)
    await settle(a, b)
    owned, old_id, mark = partitions(b), b.member_id, len(cb.events)
    assert len(owned) == 6

    await pause_heartbeats(b, 2.5)
    # The daemon drops b after its 1 s session and gives a everything meanwhile.
    await wait_for(lambda: partitions(a) == ALL and a._stable.is_set())
    assert partitions(b) == owned  # b has not noticed yet
    # Its next heartbeat gets UNKNOWN_MEMBER_ID: lost, then a fresh join.
    await wait_for(lambda: b.member_id not in ("", old_id) and b._stable.is_set())
    await settle(a, b, after=a.generation_id - 1)

    _expect_lost_then_assigned(cb.since(mark), owned)
    assert partitions(a) | partitions(b) == ALL and len(partitions(b)) == 6
    assert not partitions(a) & partitions(b)
    await asyncio.gather(a.close(), b.close())
    await pool.close()


async def test_removed_by_an_admin_batch_leave_loses_partitions_then_rejoins(
    bootstrap: str,
) -> None:
    pool = ConnectionPool()
    cb = Callbacks()
    a = member(bootstrap, pool, session_timeout_ms=10000)
    b = member(bootstrap, pool, session_timeout_ms=10000, **cb.kwargs())
    await a.start(10)
    await b.start(10)
    await settle(a, b)
    owned, old_id, mark = partitions(b), b.member_id, len(cb.events)

    # What an operator's `kafka-consumer-groups --delete-members`-style LeaveGroup sends.
    conn = await pool.shared(await pool.find_coordinator("g", b.bootstrap))
    resp = await conn.call(
        LeaveGroupRequest(
            group_id="g",
            members=[LeaveGroupRequestMemberIdentity(member_id=old_id, reason="admin")],
        ),
        5,
    )
    assert isinstance(resp, LeaveGroupResponse)
    assert resp.error_code == ErrorCode.NONE and [m.error_code for m in resp.members] == [
        ErrorCode.NONE
    ]

    await wait_for(lambda: b.member_id not in ("", old_id) and b._stable.is_set())
    await settle(a, b, after=1)
    _expect_lost_then_assigned(cb.since(mark), owned)
    assert partitions(a) | partitions(b) == ALL and not partitions(a) & partitions(b)
    await asyncio.gather(a.close(), b.close())
    await pool.close()


async def test_static_member_behind_a_rebalance_gets_illegal_generation_and_rejoins(
    bootstrap: str,
) -> None:
    pool = ConnectionPool()
    cb = Callbacks()
    # Rebalance timeout 5 s: a rebalance started without b completes after 5 s, and b,
    # not having synced, is dropped after another 5 s; b's paused heartbeat lands between,
    # 2.5 s from either end (a loaded machine delays the rebalance's start by a second).
    slow = {"session_timeout_ms": 10000, "rebalance_timeout_ms": 5000}
    a = member(bootstrap, pool, **slow)
    b = member(bootstrap, pool, group_instance_id="i-b", **slow, **cb.kwargs())
    await a.start(10)
    await b.start(10)
    await settle(a, b)
    assert a.is_leader
    owned, old_id, generation, mark = partitions(b), b.member_id, b.generation_id, len(cb.events)

    await pause_heartbeats(b, 7.5)
    a.request_rejoin("test: the leader rebalances")  # the leader's rejoin starts one
    # b does not rejoin; being static it is kept, and a new generation forms without it.
    await wait_for(lambda: a.generation_id > generation and a._stable.is_set(), 15)
    assert b.generation_id == generation
    # b's next heartbeat: ILLEGAL_GENERATION; it keeps its member id and rejoins.
    await wait_for(lambda: b.generation_id > generation and b._stable.is_set())
    await settle(a, b, after=generation)

    assert b.member_id == old_id
    _expect_lost_then_assigned(cb.since(mark), owned)
    assert partitions(a) | partitions(b) == ALL and not partitions(a) & partitions(b)
    await asyncio.gather(a.close(), b.close())
    await pool.close()
