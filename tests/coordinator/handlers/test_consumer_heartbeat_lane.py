"""The consumer heartbeat lane answers a steady ConsumerGroupHeartbeat exactly as the
general path would, and leaves every other one to it.

Two pipelines are driven by the same generated requests and clock: one through the
general path only, one through the lane first (the general path when it declines), as the
server does. Their answers must be the same bytes, their members' session deadlines the
same, and the lane's pipeline must write exactly the records the other writes: the lane
never answers what needs a record, nor an answer that waits for one."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, PartitionState, SingleNode
from coordinator.group.deadlines import consumer_session_key
from coordinator.handlers.consumer_heartbeat_lane import ConsumerHeartbeatLane
from coordinator.handlers.outcome import Pending
from coordinator.security.acls import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from coordinator.security.config import SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shared.catalog import topic_id_for
from coordinator.shell.connection import ConnectionProtocol
from coordinator.shell.driver import Batch
from coordinator.shell.server import Server
from coordinator.store import SecurityRows
from coordinator.telemetry.metrics import Metrics
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from protocol.frames import Request, decode_response, encode_request
from tests.coordinator.shell.pipeline import Answer, Pipeline
from tests.hypothesis_profiles import examples

GROUP = "g"
MEMBERS = ("m1", "m2", "m3")
#: Every member id a test uses (whose sessions are compared).
ALL_MEMBERS = (*MEMBERS, "m4")
ORDERS = topic_id_for("orders")
ALICE, BOB = "User:alice", "User:bob"
#: m3 is a static member.
STATIC = {"m3": "i3"}


@dataclass
class HoldingPipeline(Pipeline):
    """A pipeline whose store reports writes stored only when told (``release``)."""

    holding: bool = False
    held: list[Batch[Pending]] = field(default_factory=list)

    def _write(self, batch: Batch[Pending]) -> None:
        if self.holding:
            self.held.append(batch)
        else:
            super()._write(batch)

    def release(self) -> None:
        self.holding = False
        held, self.held = self.held, []
        for batch in held:
            super()._write(batch)


def frame(version: int, correlation: int, client_id: str | None, **fields: Any) -> bytes:
    body = ConsumerGroupHeartbeatRequest(**fields)
    return encode_request(body, version, correlation, client_id)[4:]


def join_frame(member: str, correlation: int = 1) -> bytes:
    return frame(
        1,
        correlation,
        "c",
        group_id=GROUP,
        member_id=member,
        member_epoch=0,
        instance_id=STATIC.get(member),
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )


def make(acls: bool) -> HoldingPipeline:
    security = SecuritySettings(acls_enabled=acls)
    p = HoldingPipeline(Settings(security=security))
    p.node.catalog.create("orders", 6)
    if acls:
        allow = [
            AclBinding(ALICE, kind, name, PatternType.LITERAL, op, Permission.ALLOW)
            for kind, name, op in (
                (ResourceType.GROUP, GROUP, Operation.READ),
                (ResourceType.TOPIC, "orders", Operation.DESCRIBE),
            )
        ]
        p.node.security.load(SecurityRows(acls=tuple(allow)))
    return p


class Twins:
    """The general path's pipeline and the lane's, fed the same requests."""

    def __init__(self, acls: bool = False) -> None:
        self.general, self.laned = make(acls), make(acls)
        self.lane = ConsumerHeartbeatLane(self.laned.node)
        self.conns = (self.general.connect(), self.laned.connect())
        for conn in self.conns:
            conn.conn.principal = ALICE
        self.waiting: list[tuple[Answer, Answer]] = []
        self.answered = 0  # by the lane

    def pipelines(self) -> tuple[HoldingPipeline, HoldingPipeline]:
        return self.general, self.laned

    def send(self, data: bytes, principal: str = ALICE) -> bytes | None:
        """Both pipelines' answer (asserted equal); None while it waits."""
        general_conn, laned_conn = self.conns
        general_conn.conn.principal = laned_conn.conn.principal = principal
        expected = _general(self.general, general_conn, data)
        now = self.laned.clock.now_ms()
        fast = self.lane.answer(data, laned_conn.conn, now)
        if fast is None:
            got = _general(self.laned, laned_conn, data)
        else:
            self.answered += 1
            reply, _version, error, key, deadline = fast
            assert error == 0
            if key is not None:
                self.laned.timers.schedule(key, deadline)
            got = (reply, None)
        assert got[0] == expected[0]
        assert laned_conn.conn.client_id == general_conn.conn.client_id
        if expected[1] is not None:
            assert got[1] is not None
            self.waiting.append((expected[1], got[1]))
        self.check()
        return expected[0]

    def check(self) -> None:
        general, laned = self.general.node.groups, self.laned.node.groups
        for member in ALL_MEMBERS:
            key = consumer_session_key(GROUP, member)
            assert general.timer_deadline(key) == laned.timer_deadline(key)
        assert self.general.records == self.laned.records
        assert len(self.general.events) == len(self.laned.events)
        for parked_general, parked_laned in self.waiting:
            assert _later(parked_general) == _later(parked_laned)

    def advance(self, ms: int) -> None:
        for p in self.pipelines():
            p.advance(ms)
        self.check()


def _general(
    p: Pipeline, conn: ConnectionProtocol, data: bytes
) -> tuple[bytes | None, Answer | None]:
    request = conn.receive(data)
    assert isinstance(request, Request)
    answer = p.carry_out(p.dispatcher.dispatch(request, conn.conn))
    if answer.body is None:
        return None, answer
    return conn.response(request, answer.body), None


def _later(answer: Answer) -> Any:
    return answer.later()


def epoch_of(p: Pipeline, member: str) -> int:
    g = p.node.groups.groups.get(GROUP)
    m = None if g is None else getattr(g, "members", {}).get(member)
    return -5 if m is None else int(m.member_epoch)


def reconciled(twins: Twins) -> None:
    """Every member joined and at the group's target."""
    for i, member in enumerate(MEMBERS):
        twins.send(join_frame(member, i))
    for round_ in range(6):
        twins.advance(1_000)  # the target is computed
        for member in MEMBERS:
            epoch = epoch_of(twins.general, member)
            owned = twins.general.node.groups.groups[GROUP].members[member].assigned  # type: ignore[union-attr]
            twins.send(
                frame(
                    1,
                    round_,
                    "c",
                    group_id=GROUP,
                    member_id=member,
                    member_epoch=epoch,
                    topic_partitions=[
                        ConsumerGroupHeartbeatRequestTopicPartitions(
                            topic_id=ORDERS, partitions=sorted(owned.get("orders", ()))
                        )
                    ],
                )
            )


def steady(twins: Twins, member: str, version: int = 1, correlation: int = 9) -> bytes:
    return frame(
        version,
        correlation,
        "c",
        group_id=GROUP,
        member_id=member,
        member_epoch=epoch_of(twins.general, member),
        instance_id=STATIC.get(member),
    )


#: Fields a heartbeat may carry besides its ids and epoch (each sends it the general way).
EXTRAS: list[dict[str, Any]] = [
    {},
    {},
    {},
    {"rebalance_timeout_ms": 30_000},
    {"subscribed_topic_names": ["orders"]},
    {"subscribed_topic_names": ["orders", "payments"]},
    {"topic_partitions": []},
    {"topic_partitions": [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=ORDERS)]},
    {"rack_id": "r1"},
    {"server_assignor": "range"},
    {"server_assignor": "nope"},
    {"subscribed_topic_regex": "ord.*"},
]


#: What a generated heartbeat changes from a member's steady one (most change nothing).
VARIED = ("epoch", "member", "group", "client", "instance", "extras")


def heartbeat(data: st.DataObject, twins: Twins, member: str) -> bytes:
    """A member's steady heartbeat, or one differing from it in a field or two."""
    varied = data.draw(st.sets(st.sampled_from(VARIED), max_size=2))
    version = data.draw(st.integers(0, 1))
    epoch = epoch_of(twins.general, member)
    if "epoch" in varied:
        epoch += data.draw(st.sampled_from([-1, 1, -epoch]))
    if "member" in varied:
        member = data.draw(st.sampled_from(["nobody", "", " "]))
    extras = dict(data.draw(st.sampled_from(EXTRAS))) if "extras" in varied else {}
    if version == 0:
        extras.pop("subscribed_topic_regex", None)
    instance = STATIC.get(member)
    if "instance" in varied:
        instance = data.draw(st.sampled_from([None, "i1", "i3", " "]))
    return frame(
        version,
        data.draw(st.integers(-(2**31), 2**31 - 1)),
        data.draw(st.sampled_from([None, "other-client"])) if "client" in varied else "c",
        group_id=data.draw(st.sampled_from(["other", "", " "])) if "group" in varied else GROUP,
        member_id=member,
        member_epoch=epoch,
        instance_id=instance,
        **extras,
    )


def principal(data: st.DataObject, acls: bool) -> str:
    return data.draw(st.sampled_from([ALICE, ALICE, BOB])) if acls else ALICE


@settings(
    max_examples=examples(80, fast=30), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_the_lane_answers_byte_for_byte_as_the_general_path(data: st.DataObject) -> None:
    acls = data.draw(st.booleans())
    twins = Twins(acls=acls)
    reconciled(twins)
    for step in range(data.draw(st.integers(1, 12))):
        action = data.draw(
            st.sampled_from(
                ["beat"] * 8
                + ["advance", "join", "newcomer", "leave", "hold", "release", "grow", "cluster"]
            )
        )
        member = data.draw(st.sampled_from(ALL_MEMBERS))
        if action == "beat":
            twins.send(heartbeat(data, twins, member), principal=principal(data, acls))
        elif action == "advance":
            twins.advance(data.draw(st.sampled_from([0, 500, 1_000, 5_000, 50_000])))
        elif action == "join":
            twins.send(join_frame(member, step))
        elif action == "newcomer":
            twins.send(join_frame("m4", step))
        elif action == "leave" and member in MEMBERS:
            static = STATIC.get(member) if data.draw(st.booleans()) else None
            leave = -1 if static is None else -2  # a static member leaves for a while
            twins.send(
                frame(
                    1,
                    step,
                    "c",
                    group_id=GROUP,
                    member_id=member,
                    member_epoch=leave,
                    instance_id=static,
                )
            )
        elif action == "hold":
            for p in twins.pipelines():
                p.holding = True
        elif action == "release":
            for p in twins.pipelines():
                p.release()
            twins.check()
        elif action == "grow":
            for p in twins.pipelines():
                p.node.catalog.grow("orders", p.node.catalog.get("orders").partitions + 1)  # type: ignore[union-attr]
        elif action == "cluster":
            state = data.draw(st.sampled_from([None, PartitionState.LOADING, PartitionState.OWNED]))
            for p in twins.pipelines():
                mine = {} if state is None else {partition_for(GROUP, 6): state}
                p.node.routing = ClusterRouting(
                    node_id=1,
                    partitions=6,
                    mine=mine,
                    lease_valid_until_ms=p.clock.now_ms() + 60_000,
                )
    for p in twins.pipelines():
        p.release()
        p.node.routing = SingleNode()
    twins.check()


def test_a_reconciled_members_steady_heartbeat_is_answered_by_the_lane_with_nothing_written() -> (
    None
):
    twins = Twins()
    reconciled(twins)
    records = len(twins.laned.records)
    for version in (0, 1):
        for member in MEMBERS:
            before = twins.answered
            twins.send(steady(twins, member, version))
            assert twins.answered == before + 1
    assert len(twins.laned.records) == records
    # Sessions stay alive on the lane's heartbeats alone.
    for _ in range(20):
        twins.advance(5_000)
        for member in MEMBERS:
            twins.send(steady(twins, member))
    assert all(epoch_of(twins.laned, m) > 0 for m in MEMBERS)


def test_a_member_whose_target_changes_is_told_on_its_next_heartbeat() -> None:
    twins = Twins()
    reconciled(twins)
    twins.send(frame(1, 1, "c", group_id=GROUP, member_id="m3", member_epoch=-1))  # m3 leaves
    before = twins.answered
    assert twins.send(steady(twins, "m1")) is None  # held for the group's next target
    assert twins.answered == before
    twins.advance(1_000)  # the target is computed: both pipelines answer m1 alike
    (_general, laned), *_ = twins.waiting
    told = laned.later()
    assert told is not None and told.assignment is not None
    assert told.member_epoch > 0


@pytest.mark.parametrize("state", [None, PartitionState.LOADING])
def test_a_group_this_node_does_not_serve_goes_the_general_way(
    state: PartitionState | None,
) -> None:
    twins = Twins()
    reconciled(twins)
    p = twins.laned
    mine = {} if state is None else {partition_for(GROUP, 6): state}
    p.node.routing = ClusterRouting(
        node_id=1, partitions=6, mine=mine, lease_valid_until_ms=p.clock.now_ms() + 60_000
    )
    assert twins.lane.answer(steady(twins, "m1"), twins.conns[1].conn, p.clock.now_ms()) is None


def test_a_group_with_records_in_flight_goes_the_general_way() -> None:
    twins = Twins()
    reconciled(twins)
    for p in twins.pipelines():
        p.holding = True
    # m2's client id changes: its member record is written (and held).
    twins.send(
        frame(
            1,
            3,
            "another",
            group_id=GROUP,
            member_id="m2",
            member_epoch=epoch_of(twins.general, "m2"),
        )
    )
    before = twins.answered
    assert twins.send(steady(twins, "m1")) is None  # waits for m2's record
    assert twins.answered == before
    for p in twins.pipelines():
        p.release()
    twins.check()
    twins.send(steady(twins, "m1"))
    assert twins.answered == before + 1


def test_frames_the_lane_cannot_read_go_to_the_general_path() -> None:
    twins = Twins()
    reconciled(twins)
    good = steady(twins, "m1")
    conn = twins.conns[1].conn
    now = twins.laned.clock.now_ms()
    for bad in (good[:-2], good + b"\x00", good[:2] + b"\x00\x07" + good[4:], b"\x00\x44"):
        assert twins.lane.answer(bad, conn, now) is None


def _varied(twins: Twins, member: str = "m1", client: str | None = "c", **change: Any) -> bytes:
    fields: dict[str, Any] = {
        "group_id": GROUP,
        "member_id": member,
        "member_epoch": epoch_of(twins.general, member),
        "instance_id": STATIC.get(member),
    }
    fields.update(change)
    return frame(1, 5, client, **fields)


#: Heartbeats of a reconciled group that are not a member's steady one.
NOT_STEADY = {
    "stale epoch": lambda t: _varied(t, member_epoch=epoch_of(t.general, "m1") - 1),
    "epoch ahead": lambda t: _varied(t, member_epoch=epoch_of(t.general, "m1") + 1),
    "rejoin at epoch 0": lambda t: _varied(t, member_epoch=0),
    "unknown member": lambda t: _varied(t, member_id="nobody"),
    "blank member id": lambda t: _varied(t, member_id=" "),
    "another's instance (fenced)": lambda t: _varied(t, instance_id="i3"),
    "unknown instance": lambda t: _varied(t, instance_id="i9"),
    "blank instance": lambda t: _varied(t, instance_id=" "),
    "another group": lambda t: _varied(t, group_id="other"),
    "blank group": lambda t: _varied(t, group_id=" "),
    "another client id": lambda t: _varied(t, client="another"),
    "no client id": lambda t: _varied(t, client=None),
    "rebalance timeout": lambda t: _varied(t, rebalance_timeout_ms=30_000),
    "subscription": lambda t: _varied(t, subscribed_topic_names=["orders"]),
    "owned partitions": lambda t: _varied(t, topic_partitions=[]),
    "rack": lambda t: _varied(t, rack_id="r"),
    "assignor": lambda t: _varied(t, server_assignor="uniform"),
    "regex": lambda t: _varied(t, subscribed_topic_regex="o.*"),
    "leave": lambda t: _varied(t, member_epoch=-1),
    "static leave": lambda t: _varied(t, member="m3", member_epoch=-2),
}


@pytest.mark.parametrize("case", list(NOT_STEADY), ids=list(NOT_STEADY))
def test_a_heartbeat_that_is_not_a_steady_one_goes_the_general_way(case: str) -> None:
    twins = Twins()
    reconciled(twins)
    before = twins.answered
    twins.send(NOT_STEADY[case](twins))  # the same bytes either way (asserted by send)
    assert twins.answered == before
    for member in MEMBERS:  # and afterwards both pipelines agree
        twins.send(steady(twins, member))


def test_a_member_with_partitions_to_revoke_goes_the_general_way() -> None:
    twins = Twins()
    reconciled(twins)
    twins.send(join_frame("m4"))  # a newcomer: the others must give up partitions
    twins.advance(1_000)
    for member in MEMBERS:
        twins.send(steady(twins, member))  # told their new targets
    g = twins.laned.node.groups.groups[GROUP]
    revoking = [m for m in MEMBERS if g.members[m].pending_revocation]  # type: ignore[union-attr]
    assert revoking
    before = twins.answered
    for member in revoking:
        twins.send(steady(twins, member))  # still revoking: the general path answers
    assert twins.answered == before


def test_a_heartbeat_the_acls_refuse_goes_the_general_way() -> None:
    twins = Twins(acls=True)
    reconciled(twins)
    before = twins.answered
    twins.send(steady(twins, "m1"), principal=BOB)  # GROUP_AUTHORIZATION_FAILED, alike
    assert twins.answered == before
    twins.send(steady(twins, "m1"), principal=ALICE)
    assert twins.answered == before + 1


def test_a_heartbeat_from_another_host_goes_the_general_way() -> None:
    twins = Twins()
    reconciled(twins)
    for conn in twins.conns:
        conn.conn.client_host = "/10.0.0.9"  # the member's record changes
    before = twins.answered
    twins.send(steady(twins, "m1"))
    assert twins.answered == before
    twins.send(steady(twins, "m1"))  # now it is the member's host
    assert twins.answered == before + 1


# -- over sockets: metrics and the exception boundary ---------------------------------------


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0), store="memory", data_dir=tmp_path, topics=(("orders", 3),)
        )
    )
    await srv.start()
    assert srv.runtime is not None
    srv.runtime.metrics = Metrics()
    yield srv
    await srv.stop()


class Wire:
    """A client on a raw socket: frames sent, size-prefixed answers read back in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def call(self, data: bytes) -> bytes:
        self.writer.write(struct.pack(">i", len(data)) + data)
        (size,) = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 10))
        return await self.reader.readexactly(size)


async def wire(server: Server) -> Wire:
    return Wire(*await asyncio.open_connection("127.0.0.1", server.port))


def _answer(version: int, data: bytes) -> ConsumerGroupHeartbeatResponse:
    body = decode_response(BY_KEY[68], version, data)[1]
    assert isinstance(body, ConsumerGroupHeartbeatResponse)
    return body


async def _reconciled(w: Wire) -> int:
    """A member m1 at its target over the wire (the general path); its epoch."""
    body = _answer(1, await w.call(join_frame("m1")))
    assignment = body.assignment
    owned = [] if assignment is None else assignment.topic_partitions
    for _ in range(10):
        owned_now = [
            ConsumerGroupHeartbeatRequestTopicPartitions(
                topic_id=t.topic_id, partitions=t.partitions
            )
            for t in owned
        ]
        data = frame(
            1,
            2,
            "c",
            group_id=GROUP,
            member_id="m1",
            member_epoch=body.member_epoch,
            topic_partitions=owned_now,
        )
        body = _answer(1, await w.call(data))
        if body.assignment is not None:
            owned = body.assignment.topic_partitions
        if owned:
            return body.member_epoch
        await asyncio.sleep(0.2)  # the target is computed within the assignment interval
    raise AssertionError("no assignment")


async def test_over_sockets_the_lane_answers_steady_heartbeats_counted_as_any_request(
    server: Server,
) -> None:
    assert server.runtime is not None
    w = await wire(server)
    epoch = await _reconciled(w)
    metrics = server.runtime.metrics
    assert metrics is not None
    labels = {"api": "ConsumerGroupHeartbeat", "version": "1"}
    before = metrics.registry.get_sample_value("group_coordinator_requests_total", labels)
    assert before is not None
    beat = frame(1, 3, "c", group_id=GROUP, member_id="m1", member_epoch=epoch)
    lane = server.runtime.consumer_heartbeat_lane
    assert lane is not None
    answered = lane.answered
    for _ in range(10):
        body = _answer(1, await w.call(beat))
        assert (body.error_code, body.member_epoch, body.assignment) == (0, epoch, None)
    assert lane.answered == answered + 10
    after = metrics.registry.get_sample_value("group_coordinator_requests_total", labels)
    assert after == before + 10
    count = metrics.registry.get_sample_value(
        "group_coordinator_request_latency_seconds_count", {"api": "ConsumerGroupHeartbeat"}
    )
    assert count == after  # timed as every request is
    w.writer.close()


@pytest.mark.parametrize("which", ["heartbeat_lane", "consumer_heartbeat_lane"])
async def test_a_lane_that_fails_closes_only_its_connection_as_the_dispatcher_does(
    server: Server, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    assert server.runtime is not None
    lane = getattr(server.runtime, which)

    answer = lane.answer

    def broken(data: bytes, *rest: Any) -> Any:
        if b"broken" in data:
            raise RuntimeError("a bug")
        return answer(data, *rest)

    monkeypatch.setattr(lane, "answer", broken)
    bad, healthy = await wire(server), await wire(server)
    if which == "heartbeat_lane":
        data = encode_request(HeartbeatRequest(group_id=GROUP, member_id="broken"), 4, 1, "x")[4:]
    else:
        data = frame(1, 1, "c", group_id=GROUP, member_id="broken", member_epoch=1)
    with capture_logs() as logs:
        bad.writer.write(struct.pack(">i", len(data)) + data)
        assert await asyncio.wait_for(bad.reader.read(), 10) == b""  # closed, no answer
    failed = [e for e in logs if e["event"] == "request failed"]
    assert failed and failed[0]["log_level"] == "error" and failed[0]["exc_info"]
    # Everyone else is served.
    body = _answer(1, await healthy.call(join_frame("m2")))
    assert body.error_code == 0
    healthy.writer.close()


def test_a_group_with_its_own_heartbeat_interval_is_answered_with_it() -> None:
    twins = Twins()
    reconciled(twins)
    change = IncrementalAlterConfigsAlterableConfig(
        name="consumer.heartbeat.interval.ms", config_operation=0, value="7000"
    )
    alter = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsResource(resource_type=32, resource_name=GROUP, configs=[change])
        ],
        validate_only=False,
    )
    for p, conn in zip(twins.pipelines(), twins.conns, strict=True):
        answer = p.send(conn, alter, 1)
        assert isinstance(answer, Answer) and answer.body.responses[0].error_code == 0
    answer = twins.send(steady(twins, "m1"))  # the same bytes either way (asserted by send)
    assert answer is not None
    assert _answer(1, answer[4:]).heartbeat_interval_ms == 7000
