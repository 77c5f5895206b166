"""What a daemon remembers across a graceful restart (SQLite store in a temporary data dir).

The SIGKILL cases run the daemon as a process: tests/integration/test_durability.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from coordinator.client.connection import connect
from coordinator.group.config import GroupConfig
from coordinator.group.deadlines import heartbeat_key
from coordinator.settings.config import Settings
from coordinator.shared.clock import LoopClock
from coordinator.shell.server import Server
from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode
from tests.wire import commit, describe, fetch, heartbeat, join_static_leader

StartServer = Callable[..., Awaitable[Server]]


@pytest.fixture
async def start_server(tmp_path: Path) -> AsyncIterator[StartServer]:
    running: list[Server] = []
    settings = Settings(
        listen=("127.0.0.1", 0),
        data_dir=tmp_path,
        topics=(("orders", 50),),
        group=GroupConfig(initial_rebalance_delay_ms=0),
    )

    async def start(clock: LoopClock | None = None) -> Server:
        for srv in running:
            await srv.stop()
        running.clear()
        srv = Server(settings, clock)
        await srv.start()
        running.append(srv)
        return srv

    yield start
    for srv in running:
        await srv.stop()


async def test_offsets_of_three_groups_survive_a_restart(start_server: StartServer) -> None:
    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    wanted = {
        g: {("orders", p): (1000 * i + p, f"{g}/{p}") for p in range(50)}
        for i, g in enumerate(["a", "b", "c"])
    }
    await asyncio.gather(*(commit(c, g, offsets) for g, offsets in wanted.items()))
    c.close()

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    for g, offsets in wanted.items():
        assert await fetch(c, g) == offsets
    c.close()


async def test_static_member_keeps_its_id_and_assignment(start_server: StartServer) -> None:
    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    member_id, generation = await join_static_leader(c, "s", "instance-1", b"my-partitions")
    c.close()

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    [g] = (await describe(c, "s")).groups
    assert g.group_state == "Stable"
    assert [(m.member_id, m.group_instance_id, m.member_assignment) for m in g.members] == [
        (member_id, "instance-1", b"my-partitions")
    ]
    # Its session carried over: the old member id and generation are still good.
    assert await heartbeat(c, "s", member_id, generation, "instance-1") == 0
    c.close()


async def test_restored_member_gets_only_what_was_left_of_its_session(
    start_server: StartServer,
) -> None:
    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    member_id, _ = await join_static_leader(c, "s", "instance-1", b"x")
    assert srv.runtime is not None
    joined_at = srv.runtime.groups.groups["s"].members[member_id].last_heartbeat_ms
    c.close()

    later = LoopClock(asyncio.get_running_loop())
    later.offset_ms += 5000  # the restart comes 5 s later
    srv = await start_server(later)
    assert srv.runtime is not None
    deadline = srv.runtime.groups.timer_deadline(heartbeat_key("s", member_id))
    assert deadline == joined_at + 30000  # not a fresh 30 s from the restart
    assert deadline <= srv.runtime.now_ms() + 30000 - 5000


async def test_deleted_group_stays_deleted(start_server: StartServer) -> None:
    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    await commit(c, "gone", {("orders", 0): (5, None)})
    await commit(c, "kept", {("orders", 0): (6, None)})
    resp = await c.request(DeleteGroupsRequest(groups_names=["gone"]), 2, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in resp.results] == [("gone", 0)]
    c.close()

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    [g] = (await describe(c, "gone")).groups
    assert g.group_state == "Dead"
    assert await fetch(c, "gone") == {}
    assert await fetch(c, "kept") == {("orders", 0): (6, "")}
    c.close()


async def test_deleted_offsets_stay_deleted(start_server: StartServer) -> None:
    from protocol.apis.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteRequestPartition,
        OffsetDeleteRequestTopic,
        OffsetDeleteResponse,
    )

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    await commit(c, "g", {("orders", 0): (5, "a"), ("orders", 1): (6, "b")})
    resp = await c.request(
        OffsetDeleteRequest(
            group_id="g",
            topics=[
                OffsetDeleteRequestTopic(
                    name="orders", partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        0,
        OffsetDeleteResponse,
    )
    assert (
        resp.error_code == ErrorCode.NONE
        and resp.topics[0].partitions[0].error_code == ErrorCode.NONE
    )
    c.close()

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    assert await fetch(c, "g") == {("orders", 1): (6, "b")}
    c.close()


async def test_created_topics_survive_a_restart(start_server: StartServer) -> None:
    from protocol.apis.create_topics import (
        CreateTopicsRequest,
        CreateTopicsRequestCreatableTopic,
        CreateTopicsResponse,
    )

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    created = await c.request(
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name="made", num_partitions=7, replication_factor=1
                )
            ],
            timeout_ms=1000,
        ),
        7,
        CreateTopicsResponse,
    )
    assert created.topics[0].error_code == ErrorCode.NONE
    c.close()

    srv = await start_server()
    c = await connect("127.0.0.1", srv.port)
    meta = await c.request(MetadataRequest(topics=None), 12, MetadataResponse)
    partitions = {t.name: len(t.partitions) for t in meta.topics}
    assert partitions == {"orders": 50, "made": 7}
    c.close()
