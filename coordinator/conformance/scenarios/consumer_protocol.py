"""KIP-848, the consumer group protocol (ConsumerGroupHeartbeat): epochs, fencing,
revocation before reassignment, leaving, static members, regular expressions, and offsets
committed at the member's epoch.
A broker that does not advertise ConsumerGroupHeartbeat skips these."""

from __future__ import annotations

import uuid
from typing import Any

from protocol.apis import BY_KEY, ApiKey
from protocol.apis.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.errors import ErrorCode

from ..probe import Probe, describe
from ..registry import scenario

AREA = "KIP-848 consumer groups"
REQUIRES: dict[int, int] = {ApiKey.CONSUMER_GROUP_HEARTBEAT: 0}
MEMBER_COMMIT_VERSION = 9  # OffsetCommit v9 carries the member epoch; v10 names topics by id


async def topic_id(probe: Probe) -> uuid.UUID:
    """The suite's topic's id (the consumer protocol names topics by id)."""
    version = probe.version(ApiKey.METADATA, at_least=10)
    version = min(version, BY_KEY[ApiKey.METADATA].max_version)
    conn = await probe.connect()
    req = MetadataRequest(topics=[MetadataRequestTopic(name=probe.target.topic)])
    meta = await probe.within(conn.send(req, version), probe.target.reply_s, "Metadata")
    ids: list[uuid.UUID] = [
        t.topic_id for t in meta.topics if t.error_code == 0 and t.topic_id.int != 0
    ]
    probe.check("the topic's id in Metadata", True, bool(ids), describe(req, version))
    return ids[0]


class Consumer:
    """A consumer-protocol member driven by hand: it owns what it was last assigned."""

    def __init__(self, probe: Probe, group_id: str, topic: uuid.UUID) -> None:
        self.probe = probe
        self.group_id = group_id
        self.topic = topic
        self.member_id = str(uuid.uuid4())  # v1: the client makes its member id (KIP-1082)
        self.epoch = 0
        self.owned: set[int] = set()
        self.conn: Any = None
        self.last: tuple[Any, int] | None = None
        self.instance_id: str | None = None

    async def send(self, **fields: Any) -> ConsumerGroupHeartbeatResponse:
        if self.conn is None:
            self.conn = await self.probe.connect(f"kip848-{self.member_id[:8]}")
        version = self.probe.version(ApiKey.CONSUMER_GROUP_HEARTBEAT)
        fields.setdefault("instance_id", self.instance_id)
        req = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, **fields
        )
        self.last = (req, version)
        resp: ConsumerGroupHeartbeatResponse = await self.probe.within(
            self.conn.send(req, version), self.probe.target.reply_s, "ConsumerGroupHeartbeat"
        )
        return resp

    def _absorb(self, r: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
        if r.error_code == 0:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = {
                    p
                    for tp in r.assignment.topic_partitions
                    if tp.topic_id == self.topic
                    for p in tp.partitions
                }
        return r

    async def join(self) -> ConsumerGroupHeartbeatResponse:
        r = await self.send(
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=[self.probe.target.topic],
            topic_partitions=[],
        )
        self.expect("joining with epoch 0", 0, r.error_code)
        return self._absorb(r)

    async def beat(self, epoch: int | None = None) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat reporting what it owns (after revoking what it was told to)."""
        owned = [
            ConsumerGroupHeartbeatRequestTopicPartitions(
                topic_id=self.topic, partitions=sorted(self.owned)
            )
        ]
        r = await self.send(
            member_epoch=self.epoch if epoch is None else epoch, topic_partitions=owned
        )
        return self._absorb(r) if epoch is None else r

    async def leave(self) -> None:
        r = await self.send(member_epoch=-1)
        self.expect("leaving with epoch -1", 0, r.error_code)

    def expect(self, what: str, expected: int, actual: int) -> None:
        body, version = self.last if self.last else (None, 0)
        self.probe.check_error(what, expected, actual, body, version)


async def consumers(probe: Probe, count: int) -> list[Consumer]:
    topic = await topic_id(probe)
    group = probe.group_id("kip848")
    return [Consumer(probe, group, topic) for _ in range(count)]


@scenario(AREA, faults=("kip848_no_assignment",), requires=REQUIRES)
async def testConsumerGroupFirstMemberGetsEveryPartition(probe: Probe) -> None:
    [a] = await consumers(probe, 1)
    r = await a.join()
    partitions = set(range(probe.target.topic_partitions))
    probe.check("the first member's epoch", True, r.member_epoch >= 1)
    probe.check("the first member's assignment", partitions, a.owned)
    probe.check("a heartbeat interval", True, r.heartbeat_interval_ms > 0)
    await a.leave()


@scenario(AREA, faults=("kip848_assign_before_revoke",), requires=REQUIRES)
async def testConsumerGroupPartitionMovesOnlyAfterRevocation(probe: Probe) -> None:
    a, b = await consumers(probe, 2)
    await a.join()
    everything = set(a.owned)
    await b.join()
    probe.check("a joiner gets nothing its owner still holds", set(), b.owned)
    await a.beat()  # told to revoke some
    probe.check("the owner is asked to revoke half", len(everything) // 2, len(a.owned))
    await b.beat()
    probe.check("nothing moves before the owner reports the revocation", set(), b.owned)
    await a.beat()  # reports it
    await b.beat()
    probe.check("the joiner owns what the owner revoked", everything - a.owned, b.owned)
    await a.leave()
    await b.leave()


@scenario(AREA, faults=("kip848_skip_epoch_check",), requires=REQUIRES)
async def testConsumerGroupEpochAheadIsFenced(probe: Probe) -> None:
    [a] = await consumers(probe, 1)
    await a.join()
    r = await a.beat(epoch=a.epoch + 1)
    a.expect("a heartbeat with the next epoch", ErrorCode.FENCED_MEMBER_EPOCH, r.error_code)
    await a.leave()


@scenario(AREA, faults=("kip848_unknown_member_accepted",), requires=REQUIRES)
async def testConsumerGroupUnknownMember(probe: Probe) -> None:
    a, stranger = await consumers(probe, 2)
    await a.join()
    r = await stranger.beat(epoch=1)
    stranger.expect("a heartbeat from an unknown member", ErrorCode.UNKNOWN_MEMBER_ID, r.error_code)
    await a.leave()


@scenario(AREA, faults=("kip848_commit_skips_epoch",), requires=REQUIRES)
async def testConsumerGroupOffsetCommitChecksTheMemberEpoch(probe: Probe) -> None:
    [a] = await consumers(probe, 1)
    await a.join()
    version = probe.version(ApiKey.OFFSET_COMMIT, at_least=MEMBER_COMMIT_VERSION)

    async def commit(epoch: int) -> int:
        req = OffsetCommitRequest(
            group_id=a.group_id,
            generation_id_or_member_epoch=epoch,
            member_id=a.member_id,
            topics=[
                OffsetCommitRequestTopic(
                    name=probe.target.topic,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
                    ],
                )
            ],
        )
        a.last = (req, version)
        resp: OffsetCommitResponse = await probe.within(
            a.conn.send(req, version), probe.target.reply_s, "OffsetCommit"
        )
        return resp.topics[0].partitions[0].error_code

    a.expect("a commit at a stale epoch", ErrorCode.STALE_MEMBER_EPOCH, await commit(a.epoch + 1))
    a.expect("a commit at the member's epoch", 0, await commit(a.epoch))
    await a.leave()


@scenario(AREA, faults=("kip848_commit_refuses_older_epoch",), requires=REQUIRES)
async def testConsumerGroupCommitFromBeforeARevocationKeepsTheKeptPartitions(
    probe: Probe,
) -> None:
    """KIP-1251 (Kafka 4.3): a commit sent at the epoch the member had before it gave up
    partitions (in flight while it moved on) is taken for those it kept and refused
    STALE_MEMBER_EPOCH for those it gave up. Kafka 4.2 and older refuse it all."""
    a, b = await consumers(probe, 2)
    await a.join()
    before = a.epoch
    everything = set(a.owned)
    await b.join()
    await a.beat()  # told to revoke some: still at its epoch
    await a.beat()  # reports them revoked: the next epoch
    probe.check("the member moved to a newer epoch", True, a.epoch > before)
    kept = set(a.owned)
    version = probe.version(ApiKey.OFFSET_COMMIT, at_least=MEMBER_COMMIT_VERSION)
    req = OffsetCommitRequest(
        group_id=a.group_id,
        generation_id_or_member_epoch=before,
        member_id=a.member_id,
        topics=[
            OffsetCommitRequestTopic(
                name=probe.target.topic,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                    for p in sorted(everything)
                ],
            )
        ],
    )
    a.last = (req, version)
    resp: OffsetCommitResponse = await probe.within(
        a.conn.send(req, version), probe.target.reply_s, "OffsetCommit"
    )
    got = {q.partition_index: q.error_code for t in resp.topics for q in t.partitions}
    stale = ErrorCode.STALE_MEMBER_EPOCH
    wanted = {p: 0 if p in kept else stale for p in sorted(everything)}
    probe.check(
        "a commit at the epoch before the revocation, per partition",
        wanted,
        got,
        describe(req, version),
    )
    await a.leave()
    await b.leave()


@scenario(
    AREA,
    faults=("kip848_describe_hides_revoking",),
    requires={**REQUIRES, ApiKey.CONSUMER_GROUP_DESCRIBE: 0},
)
async def testConsumerGroupDescribeShowsPartitionsBeingRevoked(probe: Probe) -> None:
    """KAFKA-20431 (Kafka 4.3): a member revoking partitions still holds them, and
    ConsumerGroupDescribe says so (Kafka 4.2 and older list only those it keeps)."""
    a, b = await consumers(probe, 2)
    await a.join()
    everything = set(a.owned)
    await b.join()
    await a.beat()  # told to revoke some: it still holds them until it reports back
    version = probe.version(ApiKey.CONSUMER_GROUP_DESCRIBE)
    req = ConsumerGroupDescribeRequest(group_ids=[a.group_id])
    described: ConsumerGroupDescribeResponse = await probe.within(
        a.conn.send(req, version), probe.target.reply_s, "ConsumerGroupDescribe"
    )
    members = {m.member_id: m for g in described.groups for m in g.members}
    probe.check("the revoking member is described", True, a.member_id in members)
    shown = {
        p
        for tp in members[a.member_id].assignment.topic_partitions
        if tp.topic_id == a.topic
        for p in tp.partitions
    }
    probe.check("the member was told to revoke some", True, len(a.owned) < len(everything))
    probe.check(
        "a revoking member's described assignment", everything, shown, describe(req, version)
    )
    await a.leave()
    await b.leave()


@scenario(AREA, faults=("kip848_leave_keeps_partitions",), requires=REQUIRES)
async def testConsumerGroupLeaverPartitionsGoToTheOthers(probe: Probe) -> None:
    a, b = await consumers(probe, 2)
    await a.join()
    await b.join()
    for _ in range(3):  # settle: a revokes half, b takes it
        await a.beat()
        await b.beat()
    await a.leave()
    await b.beat()
    partitions = set(range(probe.target.topic_partitions))
    probe.check("the remaining member owns everything after a leave", partitions, b.owned)
    await b.leave()


@scenario(AREA, faults=("kip848_static_assignment_lost",), requires=REQUIRES)
async def testConsumerGroupStaticMemberComesBackToItsAssignment(probe: Probe) -> None:
    a, b = await consumers(probe, 2)
    instance = probe.instance_id()
    a.instance_id = instance
    await a.join()
    await b.join()
    for _ in range(3):
        await a.beat()
        await b.beat()
    kept = set(a.owned)
    r = await a.send(member_epoch=-2, instance_id=instance)
    a.expect("a static member leaving for a while (epoch -2)", 0, r.error_code)
    back = Consumer(probe, a.group_id, a.topic)
    back.instance_id = instance
    await back.join()
    probe.check("the instance's assignment, under a new member id", kept, back.owned)
    await back.leave()
    await b.leave()


@scenario(AREA, faults=("kip848_regex_matches_nothing",), requires=REQUIRES)
async def testConsumerGroupRegexSubscription(probe: Probe) -> None:
    probe.version(ApiKey.CONSUMER_GROUP_HEARTBEAT, at_least=1)  # the regex field is v1+
    [a] = await consumers(probe, 1)
    r = await a.send(
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=[],
        subscribed_topic_regex=f"{probe.target.topic[:4]}.*",
        topic_partitions=[],
    )
    a.expect("joining by regular expression", 0, r.error_code)
    a._absorb(r)
    partitions = set(range(probe.target.topic_partitions))
    probe.check("the partitions of the topic the regex matches", partitions, a.owned)
    await a.leave()
