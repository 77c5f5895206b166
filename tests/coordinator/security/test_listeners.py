"""Listeners over real sockets: TLS, SASL before anything else, each listener advertising
itself, and ACLs keeping one principal out of another's groups."""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from coordinator.client.connection import ConnectionClosed, KafkaConnectionClient
from coordinator.group.config import GroupConfig
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import ClientAuth, Listener, SecurityProtocol, SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.settings.config import Settings
from coordinator.settings.limits import ConnectionLimits
from coordinator.shell.server import Server
from coordinator.store import MemoryStore, Write
from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
)
from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.list_groups import ListGroupsRequest, ListGroupsResponse
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
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
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.errors import ErrorCode
from protocol.frames import FrameSplitter, decode_response, encode_request
from tests import wire
from tests.pki import Pki, make_pki

P = SecurityProtocol
PASSWORDS = {"alice": "alice-secret-1", "bob": "bob-secret-2", "admin": "admin-secret-3"}
GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def allow(principal: str, rtype: ResourceType, name: str, op: Operation, prefixed: bool = False):  # type: ignore[no-untyped-def]
    return AclBinding(
        principal=principal,
        resource_type=rtype,
        resource_name=name,
        pattern_type=PatternType.PREFIXED if prefixed else PatternType.LITERAL,
        operation=op,
        permission=Permission.ALLOW,
    )


ACLS = [
    allow("User:alice", ResourceType.GROUP, "alice-", Operation.READ, prefixed=True),
    allow("User:bob", ResourceType.GROUP, "bob-", Operation.ALL, prefixed=True),
    allow("User:*", ResourceType.TOPIC, "orders", Operation.READ),
    allow("User:CN=carol,O=Test", ResourceType.GROUP, "alice-app", Operation.DESCRIBE),
]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def server(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Server]:
    srv = await start_server(tmp_path, pki, monkeypatch, ClientAuth.REQUESTED)
    yield srv
    await srv.stop()


async def start_server(
    tmp_path: Path,
    pki: Pki,
    monkeypatch: pytest.MonkeyPatch,
    client_auth: ClientAuth,
    limits: ConnectionLimits | None = None,
) -> Server:
    store = MemoryStore()
    store.write(
        Write(
            credentials=[
                make_credential(u, p, m)
                for u, p in PASSWORDS.items()
                for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
            ],
            acls=ACLS,
        )
    )
    monkeypatch.setattr("coordinator.shell.server.open_store", lambda _settings: store)
    settings = Settings(
        data_dir=tmp_path,
        topics=(("orders", 2), ("secret", 1)),
        group=GroupConfig(initial_rebalance_delay_ms=0),
        limits=limits or ConnectionLimits(),
        listeners=(
            Listener(P.PLAINTEXT, "127.0.0.1", 0),
            Listener(P.SASL_PLAINTEXT, "127.0.0.1", 0, advertised=("sasl.example", 19094)),
            Listener(P.SASL_SSL, "127.0.0.1", 0),
            Listener(P.SSL, "127.0.0.1", 0),
        ),
        security=SecuritySettings(
            ssl_certfile=pki.server_cert,
            ssl_keyfile=pki.server_key,
            ssl_cafile=pki.ca,
            ssl_client_auth=client_auth,
            sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
            acls_enabled=True,
            super_users=frozenset({"User:admin"}),
            failed_authentication_delay_ms=20,
            max_failed_authentications=3,
            refresh_interval_ms=50,
        ),
    )
    srv = Server(settings)
    await srv.start()
    return srv


async def connect(
    srv: Server, protocol: SecurityProtocol, pki: Pki, cert: tuple[Path, Path] | None = None
) -> KafkaConnectionClient:
    tls = None
    if protocol.uses_tls:
        tls = ssl.create_default_context(cafile=str(pki.ca))
        if cert is not None:
            tls.load_cert_chain(*cert)
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(
        KafkaConnectionClient,
        "127.0.0.1",
        srv.port_of(protocol.value),
        ssl=tls,
        server_hostname="localhost" if tls else None,
    )
    return client


async def as_user(srv: Server, pki: Pki, user: str) -> KafkaConnectionClient:
    c = await connect(srv, P.SASL_SSL, pki)
    resp = await wire.sasl_login(c, user, PASSWORDS[user])
    assert resp.error_code == ErrorCode.NONE, resp
    return c


async def commit(c: KafkaConnectionClient, group: str, topic: str, offset: int) -> list[int]:
    resp = await c.request(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)
                    ],
                )
            ],
        ),
        8,
        OffsetCommitResponse,
    )
    return [p.error_code for t in resp.topics for p in t.partitions]


async def test_each_listener_advertises_its_own_address(server: Server, pki: Pki) -> None:
    plain = await connect(server, P.PLAINTEXT, pki)
    meta = await plain.request(MetadataRequest(topics=None), 12, MetadataResponse)
    assert [(b.host, b.port) for b in meta.brokers] == [("127.0.0.1", server.port_of("PLAINTEXT"))]
    sasl = await connect(server, P.SASL_PLAINTEXT, pki)
    assert (
        await wire.sasl_login(sasl, "alice", PASSWORDS["alice"], "SCRAM-SHA-256")
    ).error_code == ErrorCode.NONE
    meta = await sasl.request(MetadataRequest(topics=None), 12, MetadataResponse)
    assert [(b.host, b.port) for b in meta.brokers] == [("sasl.example", 19094)]
    found = await sasl.request(
        FindCoordinatorRequest(key="alice-app", key_type=0), 3, FindCoordinatorResponse
    )
    assert (found.error_code, found.host, found.port) == (ErrorCode.NONE, "sasl.example", 19094)


async def test_only_sasl_requests_before_authentication(server: Server, pki: Pki) -> None:
    c = await connect(server, P.SASL_PLAINTEXT, pki)
    versions = await c.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
    assert {17, 36} <= {k.api_key for k in versions.api_keys}
    with pytest.raises(ConnectionClosed):
        await c.request(MetadataRequest(topics=None), 12)


async def test_sasl_apis_on_a_plaintext_listener_say_illegal_state(
    server: Server, pki: Pki
) -> None:
    c = await connect(server, P.PLAINTEXT, pki)
    hs = await c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1, SaslHandshakeResponse)
    assert hs.error_code == ErrorCode.ILLEGAL_SASL_STATE


async def test_unsupported_mechanism_lists_the_enabled_ones(server: Server, pki: Pki) -> None:
    c = await connect(server, P.SASL_PLAINTEXT, pki)
    hs = await c.request(SaslHandshakeRequest(mechanism="GSSAPI"), 1, SaslHandshakeResponse)
    assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert hs.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    await asyncio.wait_for(c.wait_closed(), 5)


async def test_wrong_password_fails_closes_and_is_throttled_without_logging_secrets(
    server: Server, pki: Pki
) -> None:
    with capture_logs() as events:
        for _ in range(5):  # a client retrying a wrong password, each try after the answer
            c = await connect(server, P.SASL_SSL, pki)
            resp = await wire.sasl_login(c, "alice", "not-her-password")
            assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert resp.error_message and "not-her-password" not in resp.error_message
            await asyncio.wait_for(c.wait_closed(), 5)
        # Throttled, not locked out: the right password gets in at once.
        c = await as_user(server, pki, "alice")
        ok = await c.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert ok.error_code == ErrorCode.NONE
        c.close()
        bob = await as_user(server, pki, "bob")
        bob.close()
    failed = [e for e in events if e["event"] == "authentication failed"]
    # The delay (20 ms here) for the allowance (3), then doubling for each failure past it.
    assert [e["answered_after_ms"] for e in failed] == [20, 20, 20, 40, 80]
    assert {e["user"] for e in failed} == {"alice"}  # the log names whose login failed
    logged = repr(events)
    assert "authenticated" in logged
    for secret in ("not-her-password", PASSWORDS["alice"], "p="):
        assert secret not in logged


async def test_plain_mechanism_and_legacy_v0_handshake_with_raw_tokens(
    server: Server, pki: Pki
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port_of("SASL_PLAINTEXT"))
    splitter = FrameSplitter()

    async def frame() -> bytes:
        while True:
            frames = splitter.feed(await reader.read(65536) or b"")
            if frames:
                return frames[0]

    writer.write(encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 0, 1, "legacy"))
    _, hs = decode_response(BY_KEY[17], 0, await frame())
    assert hs.error_code == ErrorCode.NONE
    token = f"\0bob\0{PASSWORDS['bob']}".encode()
    writer.write(struct.pack(">i", len(token)) + token)
    assert await frame() == b""  # PLAIN's (empty) server token, bare
    writer.write(encode_request(MetadataRequest(topics=None), 12, 2, "legacy"))
    correlation, meta = decode_response(BY_KEY[3], 12, await frame())
    assert correlation == 2 and {t.name for t in meta.topics} == {"orders"}  # DESCRIBE via READ
    writer.close()


async def test_a_principal_cannot_touch_another_principals_group(server: Server, pki: Pki) -> None:
    alice = await as_user(server, pki, "alice")
    assert await commit(alice, "alice-app", "orders", 42) == [0]
    member_id, generation = await wire.join_static_leader(alice, "alice-app", "a-1", b"\x00")
    bob = await as_user(server, pki, "bob")
    assert await commit(bob, "bob-app", "orders", 7) == [0]

    # Join, heartbeat, commit, fetch offsets, describe, delete, find coordinator: all refused.
    with pytest.raises(AssertionError, match=str(int(GAF))):
        await wire.join_static_leader(bob, "alice-app", "b-1", b"\x01")
    assert await wire.heartbeat(bob, "alice-app", member_id, generation, "a-1") == GAF
    assert await commit(bob, "alice-app", "orders", 0) == [GAF]
    fetched = await bob.request(
        OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="alice-app", topics=None)]),
        8,
        OffsetFetchResponse,
    )
    assert fetched.groups[0].error_code == GAF and fetched.groups[0].topics == []
    described = await wire.describe(bob, "alice-app")
    assert described.groups[0].error_code == GAF and described.groups[0].members == []
    deleted = await bob.request(
        DeleteGroupsRequest(groups_names=["alice-app", "bob-app"]), 2, DeleteGroupsResponse
    )
    assert {r.group_id: r.error_code for r in deleted.results} == {
        "alice-app": GAF,
        "bob-app": 0,
    }
    found = await bob.request(
        FindCoordinatorRequest(key_type=0, coordinator_keys=["alice-app", "bob-x"]),
        4,
        FindCoordinatorResponse,
    )
    assert [c.error_code for c in found.coordinators] == [GAF, 0]
    listed = await bob.request(ListGroupsRequest(), 4, ListGroupsResponse)
    assert "alice-app" not in {g.group_id for g in listed.groups}

    # Alice's group is untouched: still Stable with her member, her offset still there.
    assert await wire.heartbeat(alice, "alice-app", member_id, generation, "a-1") == 0
    assert await wire.fetch(alice, "alice-app") == {("orders", 0): (42, "")}
    mine = await wire.describe(alice, "alice-app")
    assert mine.groups[0].group_state == "Stable"
    assert [m.member_id for m in mine.groups[0].members] == [member_id]
    # The super user sees every group.
    admin = await as_user(server, pki, "admin")
    listed = await admin.request(ListGroupsRequest(), 4, ListGroupsResponse)
    assert "alice-app" in {g.group_id for g in listed.groups}


async def test_commit_needs_read_on_each_topic(server: Server, pki: Pki) -> None:
    alice = await as_user(server, pki, "alice")
    assert await commit(alice, "alice-x", "secret", 1) == [TAF]
    assert await commit(alice, "alice-x", "orders", 1) == [0]
    meta = await alice.request(MetadataRequest(topics=None), 12, MetadataResponse)
    assert {t.name for t in meta.topics} == {"orders"}  # "all topics" omits what she can't see
    named = [MetadataRequestTopic(name=n) for n in ("secret", "orders", "nowhere")]
    meta = await alice.request(MetadataRequest(topics=named), 12, MetadataResponse)
    assert [t.error_code for t in meta.topics] == [TAF, 0, TAF]  # unknown or not: same answer


async def test_anonymous_plaintext_is_denied_by_default(server: Server, pki: Pki) -> None:
    c = await connect(server, P.PLAINTEXT, pki)
    assert await commit(c, "any-group", "orders", 1) == [GAF]
    listed = await c.request(ListGroupsRequest(), 4, ListGroupsResponse)
    assert listed.groups == []


async def test_ssl_principal_is_the_certificate_subject(server: Server, pki: Pki) -> None:
    alice = await as_user(server, pki, "alice")
    await wire.join_static_leader(alice, "alice-app", "a-1", b"\x00")
    carol = await connect(server, P.SSL, pki, cert=pki.client("carol"))
    described = await wire.describe(carol, "alice-app")
    assert (
        described.groups[0].error_code == ErrorCode.NONE
        and described.groups[0].group_state == "Stable"
    )
    assert await commit(carol, "alice-app", "orders", 1) == [GAF]  # DESCRIBE, not READ
    ops = await carol.request(
        DescribeGroupsRequest(groups=["alice-app"], include_authorized_operations=True),
        5,
        DescribeGroupsResponse,
    )
    assert ops.groups[0].authorized_operations == 1 << 8  # DESCRIBE only
    anonymous = await connect(server, P.SSL, pki)  # no client certificate: User:ANONYMOUS
    assert (await wire.describe(anonymous, "alice-app")).groups[0].error_code == GAF


async def test_acl_changes_in_the_store_take_effect_without_restart(
    server: Server, pki: Pki
) -> None:
    bob = await as_user(server, pki, "bob")
    assert await commit(bob, "shared", "orders", 1) == [GAF]
    assert server.runtime is not None
    await server.runtime.store.write(
        Write(acls=[allow("User:bob", ResourceType.GROUP, "shared", Operation.READ)])
    )
    for _ in range(100):
        if await commit(bob, "shared", "orders", 1) == [0]:
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("the new ACL was not picked up")


async def test_topic_apis_need_topic_acls(server: Server, pki: Pki) -> None:
    alice = await as_user(server, pki, "alice")  # READ on "orders" only
    created = await alice.request(
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name="new", num_partitions=1, replication_factor=1
                )
            ]
        ),
        7,
        CreateTopicsResponse,
    )
    assert created.topics[0].error_code == TAF
    offsets = await alice.request(
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(name=n, partitions=[ListOffsetsPartition(partition_index=0)])
                for n in ("orders", "secret")
            ],
        ),
        7,
        ListOffsetsResponse,
    )
    assert [t.partitions[0].error_code for t in offsets.topics] == [0, TAF]
    fetched = await alice.request(
        FetchRequest(
            max_wait_ms=0,
            topics=[
                FetchTopic(topic=n, partitions=[FetchPartition(partition=0)])
                for n in ("orders", "secret")
            ],
        ),
        12,
        FetchResponse,
    )
    assert [t.partitions[0].error_code for t in fetched.responses] == [0, TAF]
    admin = await as_user(server, pki, "admin")
    created = await admin.request(
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name="new", num_partitions=1, replication_factor=1
                )
            ]
        ),
        7,
        CreateTopicsResponse,
    )
    assert created.topics[0].error_code == ErrorCode.NONE


async def test_required_client_certificates_apply_to_ssl_not_sasl_ssl(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await start_server(tmp_path, pki, monkeypatch, ClientAuth.REQUIRED)
    try:
        carol = await connect(srv, P.SSL, pki, cert=pki.client("carol"))
        assert (await wire.describe(carol, "alice-app")).groups[0].error_code == ErrorCode.NONE
        with pytest.raises((ConnectionError, ssl.SSLError)):
            anonymous = await connect(srv, P.SSL, pki)
            await anonymous.request(ApiVersionsRequest(), 0)  # TLS 1.3: refused after
        # As in Kafka, ssl.client.auth does not apply to SASL_SSL: SASL identifies the client.
        await as_user(srv, pki, "alice")
    finally:
        await srv.stop()


async def test_plain_over_sasl_authenticate(server: Server, pki: Pki) -> None:
    c = await connect(server, P.SASL_SSL, pki)
    assert (await wire.sasl_login(c, "bob", PASSWORDS["bob"], "PLAIN")).error_code == ErrorCode.NONE
    assert await commit(c, "bob-plain", "orders", 3) == [0]
    for user, password in (("bob", "wrong"), ("nobody", PASSWORDS["bob"])):
        c = await connect(server, P.SASL_SSL, pki)
        resp = await wire.sasl_login(c, user, password, "PLAIN")
        assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        await asyncio.wait_for(c.wait_closed(), 5)


async def test_a_stalled_tls_handshake_is_dropped(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = ConnectionLimits(request_receive_timeout_ms=300)
    srv = await start_server(tmp_path, pki, monkeypatch, ClientAuth.NONE, limits)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port_of("SASL_SSL"))
        # Never sends a ClientHello: the daemon gives up after the receive timeout.
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    finally:
        await srv.stop()


async def _announce_frame(srv: Server, protocol: SecurityProtocol, size: int) -> bool:
    """Send only a frame's size prefix; True if the daemon closed the connection for it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port_of(protocol.value))
    try:
        writer.write(struct.pack(">i", size) + b"\0" * 64)
        await writer.drain()
        try:
            return await asyncio.wait_for(reader.read(1), 0.5) == b""
        except TimeoutError:
            return False  # still waiting for the rest of the frame
    finally:
        writer.close()


async def test_frames_before_sasl_authentication_are_capped_at_kafkas_512_kib(
    server: Server,
) -> None:
    # Kafka's sasl.server.max.receive.size: an unauthenticated client may not make the
    # daemon wait for (and buffer) socket.request.max.bytes.
    assert await _announce_frame(server, P.SASL_PLAINTEXT, 524288 + 1)
    assert not await _announce_frame(server, P.SASL_PLAINTEXT, 524288)
    # Where no authentication is needed, the usual socket.request.max.bytes applies.
    assert not await _announce_frame(server, P.PLAINTEXT, 524288 + 1)


async def test_parallel_plain_logins_cannot_outrun_the_failed_login_throttle(
    server: Server, pki: Pki
) -> None:
    # The server allows 3 failures per user and address. A PLAIN password check runs in a
    # thread, so without counting checks in flight, 10 logins sent at once were all checked
    # (and a guessed password among them accepted). Past the allowance, one more is
    # checked; the others are refused unchecked while it runs.
    conns = [await connect(server, P.SASL_PLAINTEXT, pki) for _ in range(10)]
    passwords = ["guess"] * 9 + [PASSWORDS["alice"]]
    results = await asyncio.gather(
        *(wire.sasl_login(c, "alice", pw, "PLAIN") for c, pw in zip(conns, passwords, strict=True))
    )
    checked = [r for r in results if "another login" not in (r.error_message or "")]
    assert len(checked) <= 4, [r.error_message for r in results]
    for c in conns:
        c.close()
