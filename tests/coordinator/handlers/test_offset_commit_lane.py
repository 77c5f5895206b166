"""The commit lane takes a stable member's OffsetCommit exactly as the general path would,
and leaves every other commit to it.

Two pipelines ("twins", their member ids made alike) are driven by the same generated
requests and clock: one through the general path only, one through the lane first (the
general path when it declines), as the server does. Commits of every version are
generated around the members' own: other generations and epochs, unknown members and
groups, simple commits (generation -1), unknown topics, topic ids and partitions,
metadata too long, duplicates, with ACLs that refuse some, while the classic group
rebalances, sessions expire, and writes are held and then stored or failed. After every
step both must have answered the same bytes (and only once stored), written the same
records, hold the same stored and pending offsets and the same session deadlines."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from coordinator.cluster.routing import ClusterRouting
from coordinator.group.config import GroupConfig
from coordinator.group.deadlines import heartbeat_key
from coordinator.handlers.offset_commit_lane import LaneCommit, OffsetCommitLane
from coordinator.handlers.outcome import Awaiting, Pending
from coordinator.security.acls import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from coordinator.security.config import ANONYMOUS, SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shared.catalog import topic_id_for
from coordinator.shell.connection import ConnectionProtocol
from coordinator.shell.driver import Batch
from coordinator.store import SecurityRows
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.errors import ErrorCode
from protocol.frames import Request, encode_request
from tests.coordinator.shell.pipeline import Answer, Pipeline
from tests.hypothesis_profiles import examples

from .test_heartbeat_lane import GROUP as CLASSIC
from .test_heartbeat_lane import stable_group, start_rebalance

CONSUMER, SIMPLE = "kg", "sg"
KIP848_MEMBERS = ("m1", "m2")
ALICE, BOB = "User:alice", "User:bob"
#: Topics and their partition counts; "nope" is not one.
TOPICS = {"orders": 6, "events": 3}


def counting_ids() -> Callable[[str], str]:
    count = itertools.count()
    return lambda prefix: f"{prefix}-{next(count)}"


@dataclass
class CommitPipeline(Pipeline):
    """A pipeline whose writes may be held, then stored or failed together."""

    holding: bool = False
    held: list[Batch[Pending]] = field(default_factory=list)
    failed_records: list[object] = field(default_factory=list)

    def _write(self, batch: Batch[Pending]) -> None:
        if self.holding:
            self.held.append(batch)
        else:
            super()._write(batch)

    def release(self, ok: bool) -> None:
        self.holding = False
        held, self.held = self.held, []
        for batch in held:
            if ok:
                super()._write(batch)
            else:
                self.failed_records += batch.records
                self.driver.written(batch, OSError("disk full"))


def make(acls: bool) -> CommitPipeline:
    """A pipeline with the topics; with ACLs, alice may commit to the groups and to "orders"
    (not "events"), and the connections that form the groups (anonymous) may form them."""
    config = GroupConfig(initial_rebalance_delay_ms=0)
    security = SecuritySettings(acls_enabled=acls)
    p = CommitPipeline(Settings(group=config, security=security), new_member_id=counting_ids())
    for name, partitions in TOPICS.items():
        p.node.catalog.create(name, partitions)
    if acls:
        allow = [
            AclBinding(who, kind, name, PatternType.LITERAL, operation, Permission.ALLOW)
            for who, kind, name, operation in (
                (ALICE, ResourceType.GROUP, CLASSIC, Operation.READ),
                (ALICE, ResourceType.GROUP, CONSUMER, Operation.READ),
                (ALICE, ResourceType.GROUP, SIMPLE, Operation.READ),
                (ALICE, ResourceType.TOPIC, "orders", Operation.READ),
                (ANONYMOUS, ResourceType.GROUP, CLASSIC, Operation.READ),
                (ANONYMOUS, ResourceType.GROUP, CONSUMER, Operation.READ),
                (ANONYMOUS, ResourceType.GROUP, SIMPLE, Operation.READ),
                (ANONYMOUS, ResourceType.TOPIC, "orders", Operation.READ),
                (ANONYMOUS, ResourceType.TOPIC, "orders", Operation.DESCRIBE),
            )
        ]
        p.node.security.load(SecurityRows(acls=tuple(allow)))
    return p


@dataclass
class Waiting:
    """A commit's answer still to come: the general path's parked reply, or the lane's."""

    conn: ConnectionProtocol
    request: Request | None = None
    answer: Answer | None = None
    taken: LaneCommit | None = None
    token: Pending | None = None

    def bytes(self) -> bytes | None:
        if self.taken is not None:
            assert self.token is not None
            if not self.token.answered:
                return None
            return self.taken.ok if self.token.result is True else self.taken.failed
        assert self.answer is not None and self.request is not None
        body = self.answer.body
        if body is None:
            assert self.answer.outcome is not None
            reply = self.answer.outcome.reply
            assert isinstance(reply, Awaiting)
            if not reply.token.answered:
                return None
            if reply.token.result is None:  # the write failed
                assert reply.failed is not None
                body = reply.failed(ErrorCode.NOT_COORDINATOR)
            else:
                body = reply.render(reply.token.result)
        return self.conn.response(self.request, body)


def general(p: Pipeline, conn: ConnectionProtocol, frame: bytes) -> Waiting:
    request = conn.receive(frame)
    assert isinstance(request, Request)
    answer = p.carry_out(p.dispatcher.dispatch(request, conn.conn))
    return Waiting(conn, request, answer)


class Twins:
    def __init__(self, acls: bool) -> None:
        self.general, self.laned = make(acls), make(acls)
        self.lane = OffsetCommitLane(self.laned.node)
        self.conns = (self.general.connect(), self.laned.connect())
        self.waiting: list[tuple[Waiting, Waiting]] = []
        self.taken = 0
        #: The commits generated so far (``commit_frame``'s arguments).
        self.sent: list[dict[str, Any]] = []
        # The same groups on both: a Stable classic group of a dynamic and a static
        # member, a consumer group of two members (epochs their own), a simple group.
        self.classic, again = (stable_group(p) for p in self.pipelines())
        assert again == self.classic
        for member in KIP848_MEMBERS:
            self.both(join_frame(member))
        self.advance(1_000)
        self.both(commit_frame(1, "c", SIMPLE, -1, "", None, [("orders", [(0, 1, -1, "")])]))

    def pipelines(self) -> tuple[CommitPipeline, CommitPipeline]:
        return self.general, self.laned

    def both(self, frame: bytes) -> None:
        """A request both take through the general path (not a commit under test)."""
        for p, conn in zip(self.pipelines(), self.conns, strict=True):
            general(p, conn, frame)
        self.check()

    def commit(self, frame: bytes, principal: str = ANONYMOUS) -> None:
        general_conn, laned_conn = self.conns
        general_conn.conn.principal = laned_conn.conn.principal = principal
        expected = general(self.general, general_conn, frame)
        taken = self.lane.commit(frame, laned_conn.conn, self.laned.clock.now_ms())
        if taken is None:
            got = general(self.laned, laned_conn, frame)
        else:
            self.taken += 1
            if taken.key is not None:
                self.laned.timers.schedule(taken.key, taken.deadline)
            token = Pending()
            self.laned._write(Batch(taken.records, [], [(token, True)]))
            got = Waiting(laned_conn, taken=taken, token=token)
        assert laned_conn.conn.client_id == general_conn.conn.client_id
        self.waiting.append((expected, got))
        self.check()

    def check(self) -> None:
        still = []
        for expected, got in self.waiting:
            answer = expected.bytes()
            assert got.bytes() == answer  # the same bytes, and only once stored
            if answer is None:
                still.append((expected, got))
        self.waiting = still
        g, fast = self.general, self.laned
        assert g.records == fast.records
        assert g.failed_records == fast.failed_records
        assert g.events == fast.events
        offsets, laned_offsets = g.node.groups.offsets, fast.node.groups.offsets
        assert offsets.committed == laned_offsets.committed
        assert offsets.pending == laned_offsets.pending
        leader, static, _generation = self.classic
        for member in (leader, static):
            key = heartbeat_key(CLASSIC, member)
            assert g.node.groups.timer_deadline(key) == fast.node.groups.timer_deadline(key)

    def advance(self, ms: int) -> None:
        for p in self.pipelines():
            p.advance(ms)
        self.check()


def join_frame(member: str) -> bytes:
    body = ConsumerGroupHeartbeatRequest(
        group_id=CONSUMER,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )
    return encode_request(body, 0, 1, "c")[4:]


#: (topic, [(partition, offset, leader epoch, metadata)]) of a commit.
Topics = list[tuple[str, list[tuple[int, int, int, str | None]]]]


def commit_frame(
    version: int,
    client_id: str | None,
    group: str,
    generation: int,
    member: str,
    instance: str | None,
    topics: Topics,
    correlation: int = 7,
    retention: int = -1,
) -> bytes:
    body = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=instance if version >= 7 else None,
        retention_time_ms=retention,
        topics=[
            OffsetCommitRequestTopic(
                name=name,
                topic_id=_topic_id(name),
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=index,
                        committed_offset=offset,
                        committed_leader_epoch=epoch,
                        committed_metadata=metadata,
                    )
                    for index, offset, epoch, metadata in partitions
                ],
            )
            for name, partitions in topics
        ],
    )
    return encode_request(body, version, correlation, client_id)[4:]


_UNKNOWN_ID = uuid.UUID(int=42)


def _topic_id(name: str) -> uuid.UUID:
    # Both twins' catalogs give a topic the same id (derived from its name).
    return topic_id_for(name) if name in TOPICS else _UNKNOWN_ID


def member_of(twins: Twins, who: str) -> tuple[str, int, str, str | None]:
    """(group, generation or epoch, member id, instance id) of a member, as it commits."""
    leader, static, _ = twins.classic
    groups = twins.general.node.groups
    classic = groups.classic_group(CLASSIC)
    if who in ("leader", "static"):
        generation = classic.generation_id if classic is not None else 0
        instance = "i1" if who == "static" else None
        return CLASSIC, generation, leader if who == "leader" else static, instance
    if who in KIP848_MEMBERS:
        g = groups.consumer_group(CONSUMER)
        m = g.members.get(who) if g is not None else None
        return CONSUMER, m.member_epoch if m is not None else 1, who, None
    return SIMPLE, -1, "", None


#: What a generated commit changes from a member's own auto-commit (most change nothing).
VARIED = ("generation", "member", "group", "instance", "topic", "partition", "metadata", "version")
METADATA = ["meta", "é" * 3, "x" * 4096, "x" * 4097, "\U0001f600" * 2048, "\U0001f600" * 2049]


def again(data: st.DataObject, sent: list[dict[str, Any]]) -> bytes:
    """A commit sent before, at other offsets (the next auto-commit: its frame the same
    but for them and the correlation id), or also another partition index or leader
    epoch (bytes of the same length that the lane must not take for the same)."""
    before = data.draw(st.sampled_from(sent))
    step = data.draw(st.integers(1, 2**32))
    topics: Topics = [
        (name, [(index, offset + step, epoch, meta) for index, offset, epoch, meta in parts])
        for name, parts in before["topics"]
    ]
    change = data.draw(st.sampled_from(["none", "none", "index", "epoch"]))
    if change != "none" and topics and topics[0][1]:
        index, offset, epoch, meta = topics[0][1][0]
        if change == "index":
            index = (index + 1) % 3
        else:
            epoch = 7 if epoch != 7 else 8
        topics[0][1][0] = (index, offset, epoch, meta)
    return commit_frame(
        **{**before, "topics": topics, "correlation": data.draw(st.integers(0, 2**31 - 1))}
    )


def commit(data: st.DataObject, twins: Twins) -> bytes:
    """A member's auto-commit (every partition of its topics, short or no metadata), or one
    differing from it in a field or two."""
    who = data.draw(st.sampled_from(["leader", "static", "m1", "m2", "simple"]))
    group, generation, member, instance = member_of(twins, who)
    varied = data.draw(st.sets(st.sampled_from(VARIED), max_size=2))
    if "generation" in varied:
        generation += data.draw(st.sampled_from([-1, 1, -generation - 1]))
    if "member" in varied:
        member = data.draw(st.sampled_from(["nobody", "", "m1"]))
    if "group" in varied:
        group = data.draw(st.sampled_from([CLASSIC, CONSUMER, SIMPLE, "other"]))
    if "instance" in varied:
        instance = data.draw(st.sampled_from([None, "i1", "i2"]))
    partition = st.tuples(
        st.integers(0, 2),
        st.integers(0, 2**40),
        st.sampled_from([-1, 0, 5]),
        st.sampled_from(["", "", None]),
    )
    topics = [
        (name, data.draw(st.lists(partition, min_size=1, max_size=3)))
        for name in data.draw(st.sampled_from([["orders"], ["orders", "events"], ["events"]]))
    ]
    if "topic" in varied:
        topics.append((data.draw(st.sampled_from(["nope", "orders"])), []))
    if "partition" in varied:
        topics[0][1].append((data.draw(st.sampled_from([3, 6, 7, -1])), 1, -1, ""))
    if "metadata" in varied:
        topics[-1][1].append((0, 2, -1, data.draw(st.sampled_from(METADATA))))
    version = data.draw(st.integers(9 if who in KIP848_MEMBERS else 1, 10))
    if "version" in varied:
        version = data.draw(st.integers(0, 10))
    fields: dict[str, Any] = {
        "version": version,
        "client_id": data.draw(st.sampled_from(["c", None, "other"])),
        "group": group,
        "generation": generation,
        "member": member,
        "instance": instance,
        "topics": topics,
        "correlation": data.draw(st.integers(-(2**31), 2**31 - 1)),
        "retention": data.draw(st.sampled_from([-1, 60_000])) if 2 <= version <= 4 else -1,
    }
    twins.sent.append(fields)
    return commit_frame(**fields)


@settings(
    max_examples=examples(80, fast=30), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_the_lane_commits_and_answers_exactly_as_the_general_path(data: st.DataObject) -> None:
    acls = data.draw(st.booleans())
    twins = Twins(acls)
    for _ in range(data.draw(st.integers(1, 14))):
        action = data.draw(
            st.sampled_from(
                ["commit"] * 6 + ["again"] * 4 + ["advance", "rebalance", "hold", "store", "fail"]
            )
        )
        if action == "again" and twins.sent:
            twins.commit(again(data, twins.sent))
        elif action in ("commit", "again"):
            principal = data.draw(st.sampled_from([ALICE, ALICE, BOB])) if acls else ANONYMOUS
            twins.commit(commit(data, twins), principal)
        elif action == "advance":
            twins.advance(data.draw(st.sampled_from([0, 1_000, 6_000, 20_000])))
        elif action == "rebalance":
            for p in twins.pipelines():
                start_rebalance(p)
            twins.check()
        elif action == "hold":
            for p in twins.pipelines():
                p.holding = True
        else:
            for p in twins.pipelines():
                p.release(ok=action == "store")
            twins.check()
    for p in twins.pipelines():
        p.release(ok=True)
    twins.check()
    assert not twins.waiting
    event(f"frames decoded by the lane: {min(twins.lane.decoded, 3)}")
    event(f"taken by the lane: {min(twins.taken, 3)}{'+' if twins.taken >= 3 else ''}")


def test_a_stable_members_commits_are_taken_by_the_lane_of_every_member_version() -> None:
    """The common case is the lane's (the generated test shows only that it agrees)."""
    twins = Twins(acls=False)
    leader, static, generation = twins.classic
    topics: Topics = [
        ("orders", [(0, 10, -1, ""), (1, 11, 3, "m")]),
        ("events", [(2, 5, -1, None)]),
    ]
    for version in range(1, 11):
        twins.commit(commit_frame(version, "c", CLASSIC, generation, leader, None, topics))
        twins.commit(commit_frame(version, "c", CLASSIC, generation, static, "i1", topics))
    epoch = twins.general.node.groups.consumer_group(CONSUMER).members["m1"].member_epoch  # type: ignore[union-attr]
    for version in (9, 10):
        twins.commit(commit_frame(version, "c", CONSUMER, epoch, "m1", None, topics))
    # v1-v6 name no instance: the static member commits as itself there too.
    assert twins.taken == 10 + 10 + 2
    assert not twins.waiting


def test_a_failed_write_fails_the_lanes_commit_as_the_general_paths() -> None:
    twins = Twins(acls=False)
    leader, _static, generation = twins.classic
    for p in twins.pipelines():
        p.holding = True
    twins.commit(
        commit_frame(8, "c", CLASSIC, generation, leader, None, [("orders", [(0, 9, -1, "")])])
    )
    assert twins.taken == 1 and twins.waiting  # nothing answered before the write
    for p in twins.pipelines():
        p.release(ok=False)
    twins.check()
    assert not twins.waiting
    assert twins.laned.node.groups.offsets.of(CLASSIC) == {}


def test_in_a_cluster_the_lane_leaves_commits_to_the_general_path() -> None:
    twins = Twins(acls=False)
    leader, _static, generation = twins.classic
    twins.laned.node.routing = ClusterRouting(
        node_id=1, partitions=6, mine={}, lease_valid_until_ms=twins.laned.clock.now_ms() + 60_000
    )
    frame = commit_frame(8, "c", CLASSIC, generation, leader, None, [("orders", [(0, 9, -1, "")])])
    assert twins.lane.commit(frame, twins.conns[1].conn, twins.laned.clock.now_ms()) is None


def test_frames_that_do_not_decode_are_left_to_the_general_path() -> None:
    twins = Twins(acls=False)
    leader, _static, generation = twins.classic
    frame = commit_frame(8, "c", CLASSIC, generation, leader, None, [("orders", [(0, 9, -1, "")])])
    now = twins.laned.clock.now_ms()
    conn = twins.conns[1].conn
    for bad in (frame[:-3], frame + b"\0", frame[:6], frame[:8] + b"\xff" * 40):
        assert twins.lane.commit(bad, conn, now) is None
    assert twins.laned.node.groups.offsets.pending_of(CLASSIC) == {}


def test_a_members_next_auto_commits_are_read_from_its_first_frame() -> None:
    """Auto-commits differ only in their offsets and correlation ids: decoded once, the
    next are read at the offsets' places; a frame of the same length differing anywhere
    else (a partition, a leader epoch), or a catalog changed since, is decoded again."""
    twins = Twins(acls=False)
    leader, _static, generation = twins.classic

    def auto(offset: int, partition: int = 1, epoch: int = -1) -> bytes:
        topics: Topics = [("orders", [(0, offset, -1, ""), (partition, offset, epoch, "")])]
        return commit_frame(9, "c", CLASSIC, generation, leader, None, topics, offset % 1000)

    for offset in (10, 20, 2**40, 0):
        twins.commit(auto(offset))
    assert (twins.taken, twins.lane.decoded) == (4, 1)
    twins.commit(auto(30, partition=2))
    twins.commit(auto(31, epoch=5))
    assert (twins.taken, twins.lane.decoded) == (6, 3)
    for p in twins.pipelines():
        p.node.catalog.create("more", 1)
    twins.commit(auto(40))
    assert (twins.taken, twins.lane.decoded) == (7, 4)
    assert not twins.waiting
    stored = twins.laned.node.groups.offsets.of(CLASSIC)["orders"]
    assert (stored[0].offset, stored[1].offset, stored[2].offset) == (40, 40, 30)


def test_a_frame_not_in_the_codecs_own_encoding_is_decoded_every_time() -> None:
    """A header carrying a tagged field (which the encoder would not write) is still taken,
    decoded each time: no template is made of bytes the codec would not make."""
    twins = Twins(acls=False)
    leader, _static, generation = twins.classic
    for offset in (1, 2, 3):
        frame = commit_frame(
            9, "c", CLASSIC, generation, leader, None, [("orders", [(0, offset, -1, "")])]
        )
        # The header's (empty) tagged fields, after the client id: one tag of 1 byte.
        header_end = 8 + 2 + len("c")
        assert frame[header_end] == 0
        tagged = frame[:header_end] + bytes([1, 5, 1, 0x2A]) + frame[header_end + 1 :]
        twins.commit(tagged)
    assert (twins.taken, twins.lane.decoded) == (3, 3)
    assert not twins.waiting
