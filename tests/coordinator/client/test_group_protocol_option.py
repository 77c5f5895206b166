"""GroupMember(..., group_protocol="consumer"): the classic member's options, a KIP-848 member."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
import structlog

from coordinator.client import ConsumerGroupMember, GroupMember
from coordinator.group.config import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server

TopicPartition = tuple[str, int]
ALL = {("t", p) for p in range(6)}
INTERVAL = ConsumerGroupConfig(
    heartbeat_interval_ms=200,
    min_heartbeat_interval_ms=100,
    session_timeout_ms=3000,
    min_session_timeout_ms=1000,
)


@pytest.fixture
async def bootstrap() -> AsyncIterator[str]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            topics=(("t", 6),),
            group=GroupConfig(initial_rebalance_delay_ms=0, consumer=INTERVAL),
        )
    )
    await srv.start()
    yield f"127.0.0.1:{srv.port}"
    await srv.stop()
    structlog.reset_defaults()


class Recorder:
    """Every member's callbacks, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, frozenset[TopicPartition]]] = []

    def member(self, bootstrap: str, name: str) -> GroupMember:
        return GroupMember(
            bootstrap,
            "g",
            topics=["t"],
            group_protocol="consumer",
            client_id=name,
            on_partitions_assigned=lambda ps: self.calls.append((name, "assigned", ps)),
            on_partitions_revoked=lambda ps: self.calls.append((name, "revoked", ps)),
            on_partitions_lost=lambda ps: self.calls.append((name, "lost", ps)),
        )

    def revoked(self, name: str) -> set[TopicPartition]:
        return {
            tp for who, what, ps in self.calls if who == name and what == "revoked" for tp in ps
        }


def owned(member: GroupMember) -> set[TopicPartition]:
    return {(t, p) for t, ps in member.assignment.items() for p in ps}


async def settled(members: list[GroupMember], timeout_s: float = 10) -> list[set[TopicPartition]]:
    """Wait until the members own disjoint, non-empty sets covering the topic."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        sets = [owned(m) for m in members]
        if all(sets) and set().union(*sets) == ALL and sum(map(len, sets)) == len(ALL):
            return sets
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not settled: {sets}")
        await asyncio.sleep(0.02)


async def test_members_share_the_topic_and_a_joiner_takes_only_what_others_gave_up(
    bootstrap: str,
) -> None:
    calls = Recorder()
    members = [calls.member(bootstrap, f"m{i}") for i in range(3)]
    assert all(isinstance(m, ConsumerGroupMember) for m in members)
    await asyncio.gather(*(m.start(timeout_s=10) for m in members))
    before = await settled(members)
    assert all(m.member_epoch > 0 for m in members)
    calls.calls.clear()  # from here on: what the joiner causes

    joiner = calls.member(bootstrap, "m3")
    await joiner.start(timeout_s=10)
    after = await settled([*members, joiner])
    for i in range(len(members)):
        # A member gives up only partitions that leave it, never one it keeps.
        assert calls.revoked(f"m{i}") <= before[i] - after[i]
    assert after[3] <= set().union(*(calls.revoked(f"m{i}") for i in range(3)))

    await members[0].close()
    await settled([members[1], members[2], joiner])
    for m in (*members[1:], joiner):
        await m.close()


async def test_offsets_committed_with_the_member_epoch_are_read_back(bootstrap: str) -> None:
    calls = Recorder()
    member = calls.member(bootstrap, "m")
    await member.start(timeout_s=10)
    await settled([member])
    await member.commit({("t", 0): 42, ("t", 5): 7})
    reader = GroupMember(bootstrap, "g", topics=["t"], group_protocol="consumer")
    try:
        got = await reader.fetch_offsets([("t", 0), ("t", 5)])
        assert {tp: o.offset for tp, o in got.items()} == {("t", 0): 42, ("t", 5): 7}
    finally:
        await member.close()
        await reader.close()


def test_an_unknown_group_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="group_protocol"):
        GroupMember("127.0.0.1:9092", "g", topics=["t"], group_protocol="eager")
