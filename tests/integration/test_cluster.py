"""A cluster of daemon processes sharing one real PostgreSQL: every node names the same
coordinator for a group, a node that does not own a group says NOT_COORDINATOR, and when
the owner is killed (or stopped) another node serves its groups at the same generation,
with every acknowledged commit."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from click.testing import CliRunner

from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.commands import cli
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from protocol.errors import ErrorCode
from tests.postgres_server import postgres_server
from tests.wire import describe, heartbeat, join_static_leader

from .conftest import KILL_CYCLES, Daemon

pytestmark = pytest.mark.integration

LEASE_MS = 3000
GROUPS = [f"group-{i}" for i in range(12)]


def node_args(url: str, node_id: int, lease_ms: int = LEASE_MS) -> tuple[str, ...]:
    return (
        "--store", "postgres", "--database-url", url, "--node-id", str(node_id),
        "--lease-timeout-ms", str(lease_ms), "--lease-renew-interval-ms", "300",
        "--offsets-topic-num-partitions", "10", "--topic", "t:4",
        "--group-initial-rebalance-delay-ms", "0",
        "--node-settle-ms", str(lease_ms),  # a restarted node gets its share back sooner
    )  # fmt: skip


async def coordinator_of(c: KafkaConnectionClient, group: str) -> int:
    """The node id FindCoordinator names (-1: none right now)."""
    r = await c.request(FindCoordinatorRequest(key=group), 3, FindCoordinatorResponse)
    return r.node_id if r.error_code == ErrorCode.NONE else -1


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float) -> float:
    """Seconds until ``check()`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if await check():
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout_s}s")


async def spread(nodes: dict[int, Daemon]) -> dict[str, int]:
    """Waits until every node names the same coordinator for every group, the groups are
    spread over all nodes, and each owner has loaded them; returns group -> owner."""
    conns = {n: await connect("127.0.0.1", d.port) for n, d in nodes.items()}
    owners: dict[str, int] = {}
    try:

        async def agreed() -> bool:
            answers = [{g: await coordinator_of(c, g) for g in GROUPS} for c in conns.values()]
            owners.update(answers[0])
            return all(a == answers[0] for a in answers) and set(answers[0].values()) == set(nodes)

        await eventually(agreed, 20)
        for group, owner in owners.items():
            await fetch(conns[owner], group)  # answers once the owner has loaded it
        return owners
    finally:
        for c in conns.values():
            c.close()


def start_cluster(start_daemon: Callable[..., Daemon], postgres: Any, n: int) -> dict[int, Daemon]:
    url = postgres.create_database("cluster")
    return {node_id: start_daemon(*node_args(url, node_id)) for node_id in range(1, n + 1)}


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_the_groups_of_a_lost_node_carry_on_elsewhere_at_the_same_generation(
    start_daemon: Callable[..., Daemon], postgres: Any, how: int
) -> None:
    nodes = start_cluster(start_daemon, postgres, 2)

    async def scenario() -> float:
        owners = await spread(nodes)
        group = next(g for g in GROUPS if owners[g] == 1)
        owner, other = nodes[1], nodes[2]
        c = await connect("127.0.0.1", owner.port)
        assert await simple_commit(c, group, 42) == {ErrorCode.NONE}  # while it is Empty
        member, generation = await join_static_leader(c, group, "instance-a", b"assigned")
        assert await heartbeat(c, group, member, generation, "instance-a") == ErrorCode.NONE
        c.close()
        elsewhere = await connect("127.0.0.1", other.port)
        got = await heartbeat(elsewhere, group, member, generation, "instance-a")
        assert got == ErrorCode.NOT_COORDINATOR

        owner.stop(how)
        started = time.monotonic()

        async def served_again() -> bool:
            if await coordinator_of(elsewhere, group) != 2:
                return False
            got = await heartbeat(elsewhere, group, member, generation, "instance-a")
            return got == ErrorCode.NONE  # same member, same generation: no rebalance

        await eventually(served_again, LEASE_MS / 1000 + 5)
        took = time.monotonic() - started
        assert await fetch(elsewhere, group) == {("t", 0): (42, "")}
        described = (await describe(elsewhere, group)).groups[0]
        assert described.group_state == "Stable"
        assert [m.member_assignment for m in described.members] == [b"assigned"]
        elsewhere.close()
        return took

    took = asyncio.run(scenario())
    print(f"{signal.Signals(how).name}: served by the other node after {took:.2f}s")
    # kill -9: once the lease runs out (+ a renewal); SIGTERM hands over at once.
    assert took <= (LEASE_MS / 1000 + 2 if how == signal.SIGKILL else 1.5), took


def test_a_joining_node_takes_its_share_without_any_group_rebalancing(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 3)

    async def brokers(port: int) -> set[int]:
        c = await connect("127.0.0.1", port)
        try:
            meta = await c.request(MetadataRequest(topics=[]), 9, MetadataResponse)
            return {b.node_id for b in meta.brokers}
        finally:
            c.close()

    async def scenario() -> None:
        before = await spread(nodes)
        assert await brokers(nodes[1].port) == {1, 2, 3}
        members = {}
        for group in GROUPS:  # a static member in every group, at its coordinator
            c = await connect("127.0.0.1", nodes[before[group]].port)
            members[group] = await join_static_leader(c, group, "instance-a", b"kept")
            c.close()
        url = nodes[1].args[nodes[1].args.index("--database-url") + 1]
        nodes[4] = start_daemon(*node_args(url, 4))  # a 4th node joins
        after = await spread(nodes)
        assert set(after.values()) == {1, 2, 3, 4}
        assert await brokers(nodes[2].port) == {1, 2, 3, 4}
        moved = [g for g in GROUPS if after[g] != before[g]]
        assert moved and all(after[g] == 4 for g in moved)
        for group in GROUPS:  # every group goes on at the same generation, moved or not
            member = members[group][0]
            c = await connect("127.0.0.1", nodes[after[group]].port)

            async def beats(
                c: KafkaConnectionClient = c, group: str = group, member: str = member
            ) -> bool:
                code = await heartbeat(c, group, member, members[group][1], "instance-a")
                assert code in RETRIABLE, (group, code)  # never a rebalance or an unknown member
                return code == ErrorCode.NONE

            await eventually(beats, 5)
            c.close()

    asyncio.run(scenario())


async def fetch(
    c: KafkaConnectionClient, group: str
) -> dict[tuple[str, int], tuple[int, str | None]]:
    """Every committed offset of ``group``, asking again while its new owner is still
    loading it (COORDINATOR_LOAD_IN_PROGRESS: what clients retry)."""
    for _ in range(200):
        request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)])
        [answer] = (await c.request(request, 8, OffsetFetchResponse)).groups
        if answer.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            assert answer.error_code == ErrorCode.NONE, answer.error_code
            return {
                (t.name, p.partition_index): (p.committed_offset, p.metadata)
                for t in answer.topics
                for p in t.partitions
                if p.committed_offset >= 0
            }
        await asyncio.sleep(0.05)
    raise AssertionError(f"{group} stayed loading")


async def simple_commit(c: KafkaConnectionClient, group: str, offset: int) -> set[int]:
    """A commit outside group management; the error codes it got (asking again while the
    group's new owner is still loading it)."""
    for _ in range(200):
        errors = await _simple_commit(c, group, offset)
        if ErrorCode.COORDINATOR_LOAD_IN_PROGRESS not in errors:
            return errors
        await asyncio.sleep(0.05)
    return errors


async def _simple_commit(c: KafkaConnectionClient, group: str, offset: int) -> set[int]:
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)
    topic = OffsetCommitRequestTopic(name="t", partitions=[partition])
    request = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[topic]
    )
    response = await c.request(request, 8, OffsetCommitResponse)
    return {p.error_code for t in response.topics for p in t.partitions}


def test_a_paused_node_never_answers_for_what_it_lost_and_its_late_writes_are_refused(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 2)
    url = nodes[1].args[nodes[1].args.index("--database-url") + 1]

    async def scenario() -> None:
        owners = await spread(nodes)
        group = next(g for g in GROUPS if owners[g] == 1)
        paused = await connect("127.0.0.1", nodes[1].port)
        assert await simple_commit(paused, group, 1) == {ErrorCode.NONE}
        assert nodes[1].proc is not None
        nodes[1].proc.send_signal(signal.SIGSTOP)
        try:
            other = await connect("127.0.0.1", nodes[2].port)

            async def taken_over() -> bool:
                return await coordinator_of(other, group) == 2

            await eventually(taken_over, LEASE_MS / 1000 + 5)
            assert await simple_commit(other, group, 2) == {ErrorCode.NONE}
        finally:
            nodes[1].proc.send_signal(signal.SIGCONT)
        # Its lease ran out while it slept: it refuses at once, before it has even learnt
        # from the database who owns the partition now.
        late = await simple_commit(paused, group, 666)
        assert late <= {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}, late
        assert await fetch(other, group) == {("t", 0): (2, "")}
        paused.close()
        other.close()
        db = await asyncpg.connect(url)
        try:
            stored = await db.fetchval(
                "SELECT committed_offset FROM offsets WHERE group_id = $1", group
            )
        finally:
            await db.close()
        assert stored == 2

    asyncio.run(scenario())


def test_cluster_status_shows_every_node_its_partitions_and_groups(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 2)
    url = nodes[1].args[nodes[1].args.index("--database-url") + 1]

    async def scenario() -> None:
        await spread(nodes)
        c = await connect("127.0.0.1", nodes[1].port)
        for group in GROUPS[:4]:
            found = await coordinator_of(c, group)
            owner = await connect("127.0.0.1", nodes[found].port)
            assert await simple_commit(owner, group, 7) == {ErrorCode.NONE}
            owner.close()
        c.close()

    asyncio.run(scenario())
    shown = CliRunner().invoke(cli.main, ["cluster", "status", "--database-url", url, "--json"])
    assert shown.exit_code == 0, shown.output
    status = json.loads(shown.output)
    assert [(n["node_id"], n["live"]) for n in status["nodes"]] == [(1, True), (2, True)]
    assert sorted(p for n in status["nodes"] for p in n["partitions"]) == list(range(10))
    assert sum(n["groups"] for n in status["nodes"]) == status["groups"] == 4
    text = CliRunner().invoke(cli.main, ["cluster", "status", "--database-url", url])
    assert "2 live node(s), 10 coordinator partitions, 4 group(s)" in text.output
    # Each node lists only its own groups (as Kafka); the admin CLI asks every node.
    bootstrap = nodes[1].bootstrap
    listed = CliRunner().invoke(cli.main, ["groups", "list", "--bootstrap", bootstrap, "--json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(g["group"] for g in json.loads(listed.output)) == sorted(GROUPS[:4])


def test_the_whole_cluster_restarts_from_postgres_with_everything_back(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    nodes = start_cluster(start_daemon, postgres, 2)
    session: dict[str, Any] = {}

    async def before() -> None:
        owners = await spread(nodes)
        for group in GROUPS[:6]:
            c = await connect("127.0.0.1", nodes[owners[group]].port)
            assert await simple_commit(c, group, 100 + GROUPS.index(group)) == {ErrorCode.NONE}
            c.close()
        static = GROUPS[6]
        c = await connect("127.0.0.1", nodes[owners[static]].port)
        session["member"], session["generation"] = await join_static_leader(
            c, static, "instance-a", b"kept"
        )
        c.close()

    asyncio.run(before())
    for d in nodes.values():
        d.stop(signal.SIGTERM)
    for d in nodes.values():
        d.start()

    async def after() -> None:
        owners = await spread(nodes)
        for group in GROUPS[:6]:
            c = await connect("127.0.0.1", nodes[owners[group]].port)
            assert await fetch(c, group) == {("t", 0): (100 + GROUPS.index(group), "")}
            c.close()
        static = GROUPS[6]
        c = await connect("127.0.0.1", nodes[owners[static]].port)
        beat = await heartbeat(c, static, session["member"], session["generation"], "instance-a")
        assert beat == ErrorCode.NONE  # the same member, at the same generation
        assert (await describe(c, static)).groups[0].members[0].member_assignment == b"kept"
        c.close()

    asyncio.run(after())


RETRIABLE = {
    ErrorCode.NONE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


def test_postgres_restarting_under_load_costs_only_retriable_errors_and_loses_nothing(
    start_daemon: Callable[..., Daemon],
) -> None:
    with postgres_server() as own:  # this test restarts it: not the shared one
        url = own.create_database("restart")
        nodes = {1: start_daemon(*node_args(url, 1))}
        group = GROUPS[0]
        seen: set[int] = set()
        acked = 0

        async def committer(stop: asyncio.Event) -> None:
            nonlocal acked
            offset = 0
            c = await connect("127.0.0.1", nodes[1].port)
            try:
                while not stop.is_set():
                    offset += 1
                    errors = await simple_commit(c, group, offset)
                    seen.update(errors)
                    if errors == {ErrorCode.NONE}:
                        acked = offset
                    else:
                        await asyncio.sleep(0.05)
            finally:
                c.close()

        async def scenario() -> None:
            await spread(nodes)
            stop = asyncio.Event()
            task = asyncio.create_task(committer(stop))
            await asyncio.sleep(0.5)
            before = acked
            await asyncio.to_thread(own.restart, 1.0)
            await asyncio.sleep(LEASE_MS / 1000 + 1)  # long enough to have to renew again
            stop.set()
            await task
            assert acked > before, "commits never succeeded again after the restart"
            c = await connect("127.0.0.1", nodes[1].port)
            try:
                stored = (await fetch(c, group))[("t", 0)][0]
            finally:
                c.close()
            assert stored >= acked

        asyncio.run(scenario())
        assert seen <= RETRIABLE, seen
        nodes[1].stop()


def test_no_acknowledged_commit_is_lost_when_the_owner_is_killed_again_and_again(
    start_daemon: Callable[..., Daemon], postgres: Any
) -> None:
    url = postgres.create_database("kill_cycles")
    lease_ms = 1500
    nodes = {n: start_daemon(*node_args(url, n, lease_ms)) for n in (1, 2)}
    rng = random.Random(20261125)
    group = GROUPS[0]

    async def writing() -> tuple[int, KafkaConnectionClient, asyncio.Task[None], list[int]]:
        """A writer committing at the group's owner, once the owner has acknowledged a
        commit: (owner, its connection, the writer, [last acknowledged offset]).

        The kill must fall while commits are being acknowledged, not during the set-up:
        under load the first commit can take longer than the whole random delay, and
        while a restarted node takes its share of the partitions back the group can move
        after ``spread`` saw it (NOT_COORDINATOR): then find its owner again."""
        refused: set[int] = set()

        async def writer(
            c: KafkaConnectionClient, offset: int, acked: list[int], first: asyncio.Event
        ) -> None:
            while True:
                offset += 1
                try:
                    errors = await simple_commit(c, group, offset)
                except Exception:
                    return  # the connection died with the node
                if errors == {ErrorCode.NONE}:
                    acked[0] = offset
                    first.set()
                else:
                    refused.update(errors)
                    await asyncio.sleep(0.05)

        for _attempt in range(5):
            owner = (await spread(nodes))[group]
            c = await connect("127.0.0.1", nodes[owner].port)
            acked = [-1]
            offset = (await fetch(c, group)).get(("t", 0), (0, ""))[0]
            first_ack = asyncio.Event()
            task = asyncio.create_task(writer(c, offset, acked, first_ack))
            try:
                await asyncio.wait_for(first_ack.wait(), 10)
                return owner, c, task, acked
            except TimeoutError:
                task.cancel()
                c.close()
        raise AssertionError(f"no owner of {group} acknowledged a commit: {refused}")

    async def cycle(restart: bool) -> tuple[int, int]:
        """Commit at the owner until it is killed; (last acknowledged, what the survivor
        serves once it has taken over). The killed node is started again if ``restart``."""
        owner, c, task, acked = await writing()
        survivor = next(n for n in nodes if n != owner)
        await asyncio.sleep(rng.uniform(0.05, 0.4))
        assert nodes[owner].proc is not None
        nodes[owner].proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(task, 10)
        c.close()
        other = await connect("127.0.0.1", nodes[survivor].port)
        found: dict[tuple[str, int], tuple[int, str | None]] = {}

        async def served() -> bool:
            nonlocal found
            if await coordinator_of(other, group) != survivor:
                return False
            found = await fetch(other, group)
            return True

        # How soon is not the point here (the failover tests time it): a loaded machine
        # takes longer than a lease.
        await eventually(served, lease_ms / 1000 + 20)
        other.close()
        nodes[owner].stop(signal.SIGKILL)  # reap it
        if restart:
            nodes[owner].start()
        return acked[0], found.get(("t", 0), (-1, ""))[0]

    for n in range(KILL_CYCLES):
        acked, stored = asyncio.run(cycle(restart=n < KILL_CYCLES - 1))
        assert acked > 0, f"cycle {n}: nothing was acknowledged"
        assert stored >= acked, (n, acked, stored)
