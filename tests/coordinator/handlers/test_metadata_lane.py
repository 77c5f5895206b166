"""The Metadata lane answers every Metadata request with the bytes the general path gives
it at that moment, whatever changed since it remembered an answer: topics created or
grown, ACLs reloaded, the settings replaced, the cluster's live nodes and this node's
lease, the listener and the caller.

Two connections of one pipeline get the same generated frames: one through the general
path (the connection protocol and the dispatcher, as the server's general path), one
through the lane first, as the server does. Their answers must be the same bytes."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.cluster.routing import ClusterRouting, NodeAddress, SingleNode
from coordinator.handlers.connection_context import ConnectionContext
from coordinator.handlers.metadata_lane import ANSWERS_HELD, MetadataLane
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import Listener, SecurityProtocol, SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shell.connection import ConnectionProtocol
from coordinator.store import SecurityRows
from protocol.apis import BY_KEY
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.frames import Request, decode_response, encode_request
from tests.coordinator.shell.pipeline import Pipeline
from tests.hypothesis_profiles import examples

NAMES = ("orders", "payments", "audit", "missing", "")
ALICE, BOB = "User:alice", "User:bob"
LISTENERS = (
    None,
    Listener(SecurityProtocol.PLAINTEXT, "127.0.0.1", 9092, ("broker-a", 19092)),
    Listener(SecurityProtocol.SSL, "127.0.0.1", 9093, ("broker-a", 19093)),
)


def general(p: Pipeline, conn: ConnectionProtocol, frame: bytes) -> bytes:
    request = conn.receive(frame)
    assert isinstance(request, Request)
    answer = p.carry_out(p.dispatcher.dispatch(request, conn.conn))
    return conn.response(request, answer.body)


def through_lane(p: Pipeline, lane: MetadataLane, conn: ConnectionContext, frame: bytes) -> Any:
    def handle(request: Request, ctx: ConnectionContext) -> Any:
        return p.carry_out(p.dispatcher.dispatch(request, ctx)).body

    answer = lane.answer(frame, conn, handle)
    return None if answer is None else answer[0]


def metadata_frame(
    version: int, correlation: int, client_id: str | None, topics: list[Any] | None, auto: bool
) -> bytes:
    if topics is None and version == 0:
        topics = []  # v0 says "every topic" with an empty list
    wanted = None
    if topics is not None:
        wanted = []
        for t in topics:
            if isinstance(t, uuid.UUID):
                if version < 10:
                    continue  # no id field before v10
                wanted.append(MetadataRequestTopic(topic_id=t, name=None))
            else:
                wanted.append(MetadataRequestTopic(name=t))
    body = MetadataRequest(
        topics=wanted,
        allow_auto_topic_creation=auto or version < 4,  # v0-3: always allowed
        include_topic_authorized_operations=False,
    )
    return encode_request(body, version, correlation, client_id)[4:]


def acl(principal: str, topic: str) -> AclBinding:
    return AclBinding(
        principal,
        ResourceType.TOPIC,
        topic,
        PatternType.LITERAL,
        Operation.DESCRIBE,
        Permission.ALLOW,
        "*",
    )


def _change(p: Pipeline, data: st.DataObject) -> None:
    """One of the things a Metadata answer depends on changes (or nothing does)."""
    node = p.node
    what = data.draw(
        st.sampled_from(["nothing", "create", "grow", "acls", "settings", "cluster", "time"])
    )
    if what == "create":
        name = data.draw(st.sampled_from(["audit", "missing", "late"]))
        if node.catalog.get(name) is None:
            node.catalog.create(name, data.draw(st.integers(1, 4)))
    elif what == "grow":
        topic = node.catalog.get("orders")
        assert topic is not None
        node.catalog.grow("orders", topic.partitions + 1)
    elif what == "acls":
        granted = data.draw(st.sets(st.sampled_from(NAMES[:3])))
        node.security.load(SecurityRows((), tuple(acl(ALICE, n) for n in sorted(granted))))
    elif what == "settings":
        node.settings = dataclasses.replace(
            node.settings, cluster_id=data.draw(st.sampled_from(["c1", "c2"]))
        )
    elif what == "cluster":
        now = p.clock.now_ms()
        peers = data.draw(st.sets(st.sampled_from([1, 2, 3])))
        node.routing = ClusterRouting(
            node_id=0,
            partitions=6,
            live={
                n: NodeAddress(n, {"PLAINTEXT": (f"node-{n}", 9092), "SSL": (f"node-{n}", 9093)})
                for n in peers
            },
            lease_valid_until_ms=now + data.draw(st.sampled_from([-1, 1_000, 60_000])),
            lease_ends_ms={n: now + data.draw(st.integers(-1, 5_000)) for n in peers},
        )
    elif what == "time":
        p.clock.advance(data.draw(st.integers(0, 3_000)))  # leases run out


@settings(
    max_examples=examples(200, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data(), acls=st.booleans())
def test_the_lane_answers_byte_for_byte_as_the_general_path(
    data: st.DataObject, acls: bool
) -> None:
    security = SecuritySettings(acls_enabled=True) if acls else SecuritySettings()
    p = Pipeline(Settings(security=security))
    p.node.catalog.create("orders", 3)
    p.node.catalog.create("payments", 1)
    if acls:
        p.node.security.load(SecurityRows((), (acl(ALICE, "orders"),)))
    lane = MetadataLane(p.node)
    ids = [p.node.catalog.id_for(n) for n in ("orders", "payments")] + [uuid.uuid4()]
    listener = data.draw(st.sampled_from(LISTENERS))
    principal = data.draw(st.sampled_from([ALICE, BOB]))
    slow, fast = p.connect(listener), p.connect(listener)
    for conn in (slow.conn, fast.conn):
        conn.principal = principal
    frames = [
        metadata_frame(
            data.draw(st.integers(0, 13)),
            data.draw(st.integers(-(2**31), 2**31 - 1)),
            data.draw(st.sampled_from([None, "", "consumer-1"])),
            data.draw(
                st.none() | st.lists(st.sampled_from([*NAMES[:4], *ids]), max_size=4, unique=True)
            ),
            False,
        )
        for _ in range(3)
    ]
    for _ in range(data.draw(st.integers(1, 8))):
        frame = data.draw(st.sampled_from(frames))
        if data.draw(st.booleans()):  # a new correlation id: the same request again
            frame = frame[:4] + data.draw(st.binary(min_size=4, max_size=4)) + frame[8:]
        expected = general(p, slow, frame)
        assert through_lane(p, lane, fast.conn, frame) == expected
        assert fast.conn.client_id == slow.conn.client_id
        _change(p, data)
    assert lane.hits + lane.made > 0


def test_an_answer_made_once_is_remembered_until_a_topic_changes() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 3)
    lane = MetadataLane(p.node)
    conn = p.connect()
    frame = metadata_frame(12, 5, "c", ["orders"], False)
    first = through_lane(p, lane, conn.conn, frame)
    again = through_lane(p, lane, conn.conn, frame[:4] + b"\x00\x00\x00\x09" + frame[8:])
    assert (lane.made, lane.hits) == (1, 1)
    assert again[8:] == first[8:] and again[4:8] == b"\x00\x00\x00\x09"
    p.node.catalog.grow("orders", 4)
    grown = through_lane(p, lane, conn.conn, frame)
    _, body = decode_response(BY_KEY[3], 12, grown[4:])
    assert isinstance(body, MetadataResponse)
    assert [len(t.partitions) for t in body.topics] == [4]  # not the remembered 3
    assert lane.made == 2


def test_a_request_that_may_create_a_topic_goes_to_the_general_path() -> None:
    p = Pipeline(Settings(auto_create_topics=True))
    lane = MetadataLane(p.node)
    conn = p.connect()
    creating = metadata_frame(12, 1, "c", ["fresh"], True)
    assert through_lane(p, lane, conn.conn, creating) is None  # its answer waits for a write
    assert p.node.catalog.get("fresh") is None
    # Not asking to create, or naming only topics that exist: answered here.
    assert through_lane(p, lane, conn.conn, metadata_frame(12, 1, "c", ["fresh"], False))
    p.node.catalog.create("fresh", 1)
    assert through_lane(p, lane, conn.conn, creating) == general(p, p.connect(), creating)


@pytest.mark.parametrize(
    "frame",
    [
        metadata_frame(12, 1, "c", ["orders"], False)[:-3],  # truncated
        metadata_frame(12, 1, "c", ["orders"], False) + b"\x00",  # trailing byte
        metadata_frame(12, 1, "c", ["orders"], False)[:2] + b"\x00\x63" + b"\x00" * 12,
    ],
    ids=["truncated", "trailing", "unserved-version"],
)
def test_frames_the_lane_cannot_read_go_to_the_general_path(frame: bytes) -> None:
    p = Pipeline()
    conn = p.connect()
    assert through_lane(p, MetadataLane(p.node), conn.conn, frame) is None
    assert not isinstance(conn.receive(frame), Request)  # which refuses them


def test_the_remembered_answers_stay_bounded() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 3)
    lane = MetadataLane(p.node)
    conn = p.connect()
    for i in range(ANSWERS_HELD + 10):
        through_lane(p, lane, conn.conn, metadata_frame(12, 1, f"client-{i}", ["orders"], False))
    assert len(lane.answers) <= ANSWERS_HELD


def test_a_cluster_node_whose_lease_ran_out_stops_presenting_itself_at_once() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 2)
    now = p.clock.now_ms()
    peer = NodeAddress(1, {"PLAINTEXT": ("node-1", 9092)})
    p.node.routing = ClusterRouting(
        node_id=0, partitions=6, live={1: peer}, lease_valid_until_ms=now + 1_000
    )
    lane = MetadataLane(p.node)
    conn = p.connect()
    frame = metadata_frame(12, 1, "c", ["orders"], False)

    def leaders() -> set[int]:
        _, body = decode_response(BY_KEY[3], 12, through_lane(p, lane, conn.conn, frame)[4:])
        assert isinstance(body, MetadataResponse)
        return {part.leader_id for t in body.topics for part in t.partitions}

    assert leaders() == {0}
    assert leaders() == {0} and lane.hits == 1
    p.clock.advance(1_000)  # nothing renewed it: the lease ran out
    assert leaders() == {1}
    p.node.routing = SingleNode()
    assert leaders() == {0}
