"""Pipelined OffsetCommits answer the same bytes as the same commits sent one at a time,
over generated commits of every version and every kind of answer: accepted (a classic
member's generation, a KIP-848 member's epoch, a simple group's), unknown member, illegal
generation, stale member epoch, unknown topic (by name and by id), no such partition, a
group or topic the ACLs refuse, and a group another node coordinates.

One daemon holds the same scenario twice, in groups of two prefixes: one gets every commit
in one write (pipelined), the other one commit at a time, each sent once the last was
answered. OffsetCommit answers name no group or member, so the two answer lists must be
the same bytes."""

from __future__ import annotations

import asyncio
import random
import struct
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.steady import stable_classic_member
from coordinator.client.connection import KafkaConnectionClient, connect
from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, PartitionState
from coordinator.group.config import GroupConfig
from coordinator.security.config import SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shared.accounts import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.shared.catalog import topic_id_for
from coordinator.shell.server import Server
from coordinator.store import Write
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request

ORDERS = topic_id_for("orders")
PARTITIONS = 4
ANONYMOUS = "User:ANONYMOUS"
VARIANTS = (
    "classic",
    "classic-unknown-member",
    "classic-illegal-generation",
    "consumer",
    "consumer-stale-epoch",
    "consumer-unknown-member",
    "simple",
    "unknown-topic",
    "unknown-partition",
    "forbidden-group",
    "forbidden-topic",
    "elsewhere",
)


@dataclass
class Scenario:
    prefix: str
    classic_member: str = ""
    generation: int = 0
    consumer_member: str = ""
    epoch: int = 0


def _allow(kind: ResourceType, name: str, pattern: PatternType) -> AclBinding:
    return AclBinding(ANONYMOUS, kind, name, pattern, Operation.ALL, Permission.ALLOW)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            data_dir=tmp_path,
            topics=(("orders", PARTITIONS), ("secret", 1)),
            group=GroupConfig(initial_rebalance_delay_ms=0),
            security=SecuritySettings(acls_enabled=True),
        )
    )
    await srv.start()
    assert srv.runtime is not None
    acls = [
        _allow(ResourceType.GROUP, "pipe-", PatternType.PREFIXED),
        _allow(ResourceType.GROUP, "one-", PatternType.PREFIXED),
        _allow(ResourceType.TOPIC, "orders", PatternType.LITERAL),
    ]
    # In the store, which the daemon re-reads them from now and then.
    await srv.runtime.store.write(Write(acls=acls))
    srv.runtime.security.load(await srv.runtime.store.read_security())
    yield srv
    await srv.stop()


async def _classic(c: KafkaConnectionClient, s: Scenario) -> None:
    s.classic_member, s.generation = await stable_classic_member(c, f"{s.prefix}-classic", 60_000)


async def _consumer(c: KafkaConnectionClient, s: Scenario) -> None:
    s.consumer_member = f"{s.prefix}-member"
    body = ConsumerGroupHeartbeatRequest(
        group_id=f"{s.prefix}-consumer",
        member_id=s.consumer_member,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )
    for _ in range(50):
        r = await c.request(body, 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == 0, r
        if r.assignment is not None:
            s.epoch = r.member_epoch
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no assignment")


def _elsewhere(mine: set[int]) -> str:
    """A group name whose partition this node does not hold, under either prefix."""
    for i in range(1000):
        name = f"pipe-elsewhere-{i}"
        if not {partition_for(name, 6), partition_for(name.replace("pipe-", "one-"), 6)} & mine:
            return name
    raise AssertionError("no such name")


def commit_frame(s: Scenario, variant: str, version: int, seq: int, elsewhere: str) -> bytes:
    group, member, generation = f"{s.prefix}-classic", s.classic_member, s.generation
    topic, by_id, partitions = "orders", ORDERS, [seq % PARTITIONS, (seq + 1) % PARTITIONS]
    if variant.startswith("consumer"):
        group, member, generation = f"{s.prefix}-consumer", s.consumer_member, s.epoch
    if variant.endswith("unknown-member"):
        member = "nobody"
    elif variant == "classic-illegal-generation":
        generation += 1
    elif variant == "consumer-stale-epoch":
        generation -= 1
    elif variant == "simple":
        group, member, generation = f"{s.prefix}-simple", "", -1
    elif variant == "unknown-topic":
        topic, by_id = "missing", uuid.UUID(int=seq + 1)
    elif variant == "unknown-partition":
        partitions = [PARTITIONS + 3]
    elif variant == "forbidden-group":
        group = "forbidden"
    elif variant == "forbidden-topic":
        topic, by_id = "secret", topic_id_for("secret")
    elif variant == "elsewhere":
        group = elsewhere.replace("pipe-", f"{s.prefix}-")
    if version == 0 or (version < 8 and variant.startswith("consumer")):
        group, member, generation = f"{s.prefix}-simple", "", -1  # v0: no member fields
    body = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                topic_id=by_id,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=seq * 10 + p, committed_metadata="m"
                    )
                    for p in partitions
                ],
            )
        ],
    )
    return encode_request(body, version, seq, "commits")


async def _read_answers(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))
        out.append(await asyncio.wait_for(reader.readexactly(size), 10))
    return out


async def test_pipelined_commits_answer_the_bytes_of_commits_sent_one_at_a_time(
    server: Server,
) -> None:
    assert server.runtime is not None
    c = await connect("127.0.0.1", server.port)
    scenarios = [Scenario("pipe"), Scenario("one")]
    for s in scenarios:
        await _classic(c, s)
        await _consumer(c, s)
    c.close()
    # A cluster of one, then: the groups this node holds are the scenarios', not "elsewhere".
    node = server.runtime.node
    mine = {
        partition_for(f"{s.prefix}-{kind}", 6)
        for s in scenarios
        for kind in ("classic", "consumer", "simple")
    }
    elsewhere = _elsewhere(mine)
    node.routing = ClusterRouting(
        node_id=node.settings.node_id,
        partitions=6,
        mine={p: PartitionState.OWNED for p in mine},
        lease_valid_until_ms=node.now_ms() + 600_000,
    )
    rng = random.Random(40)
    plan = [(v, version) for v in VARIANTS for version in range(11)]
    rng.shuffle(plan)
    pipe, one = scenarios
    pipelined = [
        commit_frame(pipe, v, version, i, elsewhere) for i, (v, version) in enumerate(plan)
    ]
    serial = [commit_frame(one, v, version, i, elsewhere) for i, (v, version) in enumerate(plan)]

    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"".join(pipelined))
    together = await _read_answers(reader, len(pipelined))
    writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    one_by_one = []
    for frame in serial:
        writer.write(frame)
        one_by_one += await _read_answers(reader, 1)
    writer.close()
    assert together == one_by_one
    # Every kind of answer was given.
    codes = set()
    for (_variant, version), answer in zip(plan, together, strict=True):
        _, body = decode_response(BY_KEY[8], version, answer)
        assert isinstance(body, OffsetCommitResponse)
        codes |= {p.error_code for t in body.topics for p in t.partitions}
    assert codes == {
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.STALE_MEMBER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.UNSUPPORTED_VERSION,  # a consumer group's member commits at v9+
    }
