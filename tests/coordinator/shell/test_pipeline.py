"""The request pipeline without sockets or sleeps: the connection protocol's gate, SASL,
ACLs, Fetch long polls and parked joins, driven by a manual clock."""

from __future__ import annotations

import struct
import uuid

import pytest

from coordinator.group.config import GroupConfig
from coordinator.group.deadlines import join_key
from coordinator.handlers.outcome import CloseConnection, Offloaded
from coordinator.security import handlers as sasl
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import Listener, SecurityProtocol, SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.settings.config import Settings
from coordinator.shell.connection import ConnectionProtocol, RawSaslToken, SendNow
from coordinator.store import SecurityRows
from protocol.apis import API_VERSIONS_KEY, BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.apis.produce import PartitionProduceData, ProduceRequest, ProduceResponse
from protocol.apis.produce import TopicProduceData as ProduceTopic
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest
from protocol.errors import ErrorCode
from protocol.frames import Request, decode_response
from tests.coordinator.shell.pipeline import Answer, Pipeline

SASL = Listener(SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9094)
ALICE = ("alice", "alice-secret")


def secured(**security: int) -> Pipeline:
    p = Pipeline(
        Settings(
            security=SecuritySettings(
                sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256"), acls_enabled=True, **security
            )
        )
    )
    p.node.catalog.create("orders", 3)
    p.node.catalog.create("payments", 1)
    describe_orders = AclBinding(
        "User:alice",
        ResourceType.TOPIC,
        "orders",
        PatternType.LITERAL,
        Operation.DESCRIBE,
        Permission.ALLOW,
    )
    p.node.security.load(
        SecurityRows(
            credentials=(make_credential(*ALICE, "SCRAM-SHA-256"),),
            acls=(describe_orders,),
        )
    )
    return p


def answered(result: Answer | str) -> Answer:
    assert isinstance(result, Answer), f"refused: {result}"
    return result


def plain(user: str, password: str) -> SaslAuthenticateRequest:
    return SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode())


def login(p: Pipeline, conn: ConnectionProtocol, user: str, password: str) -> Answer:
    assert (
        answered(p.send(conn, SaslHandshakeRequest(mechanism="PLAIN"), 1)).body.error_code
        == ErrorCode.NONE
    )
    return answered(p.send(conn, plain(user, password), 2))


def test_only_api_versions_and_sasl_pass_before_authentication() -> None:
    p = secured()
    conn = p.connect(SASL)
    versions = answered(p.send(conn, ApiVersionsRequest(), 2)).body
    assert isinstance(versions, ApiVersionsResponse) and versions.error_code == ErrorCode.NONE
    assert p.send(conn, MetadataRequest(topics=None), 12) == "Metadata before SASL authentication"


def test_plain_password_is_checked_off_the_loop_then_acls_decide_what_is_seen() -> None:
    p = secured()
    conn = p.connect(SASL)
    p.send(conn, SaslHandshakeRequest(mechanism="PLAIN"), 1)
    request = conn.receive(p.frame(plain(*ALICE), 2))
    assert isinstance(request, Request)
    outcome = p.dispatcher.dispatch(request, conn.conn)
    assert isinstance(outcome.reply, Offloaded)  # the key derivation is not run in line
    assert not conn.conn.authenticated
    assert p.carry_out(outcome).body.error_code == ErrorCode.NONE
    assert conn.conn.authenticated and conn.conn.principal == "User:alice"

    meta = answered(p.send(conn, MetadataRequest(topics=None), 12)).body
    assert isinstance(meta, MetadataResponse)
    assert [t.name for t in meta.topics] == ["orders"]  # payments is not hers to describe
    asked = MetadataRequest(topics=[MetadataRequestTopic(name="payments")])
    denied = answered(p.send(conn, asked, 12)).body
    assert [t.error_code for t in denied.topics] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]


def test_a_wrong_password_is_answered_after_the_delay_and_closes() -> None:
    p = secured(failed_authentication_delay_ms=250)
    conn = p.connect(SASL)
    refused = login(p, conn, "alice", "not-her-password")
    assert isinstance(refused.body, SaslAuthenticateResponse)
    assert refused.body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert refused.delay_ms == 250
    assert conn.conn.close_after_reply and not conn.conn.authenticated


def test_failures_past_the_allowance_are_answered_later_and_never_lock_the_user_out() -> None:
    p = secured(max_failed_authentications=2, failed_authentication_delay_ms=100)
    delays = []
    for _ in range(4):  # a client retrying as soon as each answer comes
        delays.append(login(p, p.connect(SASL), "alice", "wrong").delay_ms)
        if len(delays) < 4:
            p.clock.advance(delays[-1])
    assert delays == [100, 100, 200, 400]  # Kafka's delay, then doubling: the throttle
    # While the last failure's answer is held, another login of alice from here is
    # refused without checking (a guesser's parallel connections get one check at a time).
    conn = p.connect(SASL)
    p.send(conn, SaslHandshakeRequest(mechanism="PLAIN"), 1)
    request = conn.receive(p.frame(plain(*ALICE), 2))
    assert isinstance(request, Request)
    outcome = p.dispatcher.dispatch(request, conn.conn)
    assert not isinstance(outcome.reply, Offloaded)  # refused without checking
    held = p.carry_out(outcome).body
    assert held.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "retry after its answer" in (held.error_message or "")
    # Once answered, the client's next try is checked: the right password gets in at once,
    # with no window to wait out.
    p.clock.advance(400)
    right = login(p, p.connect(SASL), *ALICE)
    assert (right.body.error_code, right.delay_ms) == (ErrorCode.NONE, 0)


def test_after_a_v0_handshake_frames_are_bare_tokens() -> None:
    p = secured()
    conn = p.connect(SASL)
    assert (
        answered(p.send(conn, SaslHandshakeRequest(mechanism="PLAIN"), 0)).body.error_code
        == ErrorCode.NONE
    )
    token = conn.receive(b"\0alice\0alice-secret")
    assert isinstance(token, RawSaslToken)
    assert p.carry_out(sasl.raw_token(p.node, conn.conn, token.token)).body == b""
    assert conn.conn.authenticated
    assert ConnectionProtocol.raw_response(b"") == b"\0\0\0\0"


def test_an_api_versions_request_at_an_unknown_version_gets_the_v0_answer() -> None:
    p = Pipeline()
    frame = bytearray(p.frame(ApiVersionsRequest(), 0, correlation_id=7))
    struct.pack_into(">h", frame, 2, 99)  # a version from the future
    action = p.connect().receive(bytes(frame))
    assert isinstance(action, SendNow)
    correlation_id, body = decode_response(BY_KEY[API_VERSIONS_KEY], 0, action.data[4:])
    assert correlation_id == 7
    assert isinstance(body, ApiVersionsResponse)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version) for k in body.api_keys] == [(API_VERSIONS_KEY, 0)]


def test_a_fetch_waits_out_its_max_wait_up_to_the_cap() -> None:
    p = Pipeline(Settings(fetch_max_wait_cap_ms=1000))
    p.node.catalog.create("orders", 1)

    def fetch(wait_ms: int, topic: str = "orders") -> Answer:
        parts = [FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)]
        request = FetchRequest(
            max_wait_ms=wait_ms, min_bytes=1, topics=[FetchTopic(topic=topic, partitions=parts)]
        )
        return answered(p.send(p.connect(), request, 11))

    assert fetch(500).delay_ms == 500
    assert fetch(60_000).delay_ms == 1000
    now = fetch(0)
    assert now.delay_ms == 0 and isinstance(now.body, FetchResponse)
    assert now.body.responses[0].partitions[0].error_code == ErrorCode.NONE
    unknown = fetch(0, "nope").body.responses[0].partitions[0]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [13, 15, 16, 17])
def test_a_fetch_by_topic_id_finds_the_topic_and_an_unknown_id_is_unknown_topic_id(
    version: int,
) -> None:
    p = Pipeline()
    orders = p.node.catalog.create("orders", 2)

    def fetch(topic_id: uuid.UUID) -> FetchResponse:
        parts = [FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1 << 20)]
        topics = [FetchTopic(topic_id=topic_id, partitions=parts)]
        request = FetchRequest(max_wait_ms=0, min_bytes=1, topics=topics)
        body = answered(p.send(p.connect(), request, version)).body
        assert isinstance(body, FetchResponse)
        return body

    found = fetch(orders.topic_id).responses[0]
    assert found.topic_id == orders.topic_id  # answered by id, as asked
    assert (found.partitions[0].partition_index, found.partitions[0].error_code) == (1, 0)
    unknown = fetch(uuid.uuid4()).responses[0].partitions[0]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_api_versions_advertises_fetch_and_produce_up_to_kafka_4_4s_newest() -> None:
    p = Pipeline()
    body = answered(p.send(p.connect(), ApiVersionsRequest(), 3)).body
    assert isinstance(body, ApiVersionsResponse)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    # Fetch keeps v0-3, which Kafka 4 dropped, for the clients that still send them.
    assert ranges[1] == (0, 18)
    assert ranges[2] == (1, 11)  # ListOffsets
    assert ranges[42] == (0, 3)  # DeleteGroups
    # Produce is served (refused per partition): librdkafka needs it to pick a Fetch version.
    assert ranges[0] == (3, 13)


def produce(p: Pipeline, conn: ConnectionProtocol, topic: ProduceTopic, version: int) -> Answer:
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[topic])
    return answered(p.send(conn, request, version))


def batch(partition: int) -> PartitionProduceData:
    return PartitionProduceData(index=partition, records=b"")


@pytest.mark.parametrize("version", [3, 8, 12])
def test_produce_is_refused_per_partition_with_a_reason(version: int) -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 2)
    topic = ProduceTopic(name="orders", partition_data=[batch(1), batch(7)])
    body = produce(p, p.connect(), topic, version).body
    assert isinstance(body, ProduceResponse)
    refused, missing = body.responses[0].partition_responses
    assert (refused.index, refused.error_code) == (1, ErrorCode.POLICY_VIOLATION)
    assert (missing.index, missing.error_code) == (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if version >= 8:  # the version that carries a message says why
        assert refused.error_message is not None and "no records" in refused.error_message


def test_produce_by_topic_id_refuses_a_known_id_and_an_unknown_one_is_unknown_topic_id() -> None:
    p = Pipeline()
    orders = p.node.catalog.create("orders", 1)
    conn = p.connect()
    known = produce(p, conn, ProduceTopic(topic_id=orders.topic_id, partition_data=[batch(0)]), 13)
    assert known.body.responses[0].topic_id == orders.topic_id
    assert known.body.responses[0].partition_responses[0].error_code == ErrorCode.POLICY_VIOLATION
    unknown = produce(p, conn, ProduceTopic(topic_id=uuid.uuid4(), partition_data=[batch(0)]), 13)
    code = unknown.body.responses[0].partition_responses[0].error_code
    assert code == ErrorCode.UNKNOWN_TOPIC_ID


def test_produce_needs_write_on_the_topic() -> None:
    p = secured()
    conn = p.connect(SASL)
    login(p, conn, *ALICE)
    body = produce(p, conn, ProduceTopic(name="orders", partition_data=[batch(0)]), 9).body
    code = body.responses[0].partition_responses[0].error_code
    assert code == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # she may describe orders, not write


def test_produce_with_acks_0_closes_the_connection_instead_of_answering() -> None:
    p = Pipeline()
    p.node.catalog.create("orders", 1)
    conn = p.connect()
    request = conn.receive(
        p.frame(
            ProduceRequest(
                acks=0,
                timeout_ms=1000,
                topic_data=[ProduceTopic(name="orders", partition_data=[batch(0)])],
            ),
            9,
        )
    )
    assert isinstance(request, Request)
    with pytest.raises(CloseConnection):
        p.dispatcher.dispatch(request, conn.conn)


def test_a_join_parks_until_the_initial_rebalance_delay_has_passed() -> None:
    p = Pipeline(Settings(group=GroupConfig(initial_rebalance_delay_ms=3000)))
    conn = p.connect()

    def join(member_id: str) -> Answer:
        request = JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )
        return answered(p.send(conn, request, 5))

    first = join("").body
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    parked = join(first.member_id)
    assert parked.body is None and join_key("g") in p.timers
    p.advance(2999)
    assert parked.outcome is not None and parked.later() is None
    p.advance(1)
    done = parked.later()
    assert isinstance(done, JoinGroupResponse)
    assert done.error_code == ErrorCode.NONE and done.leader == first.member_id
