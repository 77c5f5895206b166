"""Security on both sides of ``serve --upstream``: the daemon logs in to its upstream with
its own settings (TLS with a CA, SASL SCRAM), never a client's; clients log in to the
daemon as ever, and topic ACLs gate what is forwarded (docs/upstream.md)."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import servers
from protocol.apis import BY_KEY
from protocol.apis.metadata import MetadataRequest
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request
from tests.pki import make_pki

from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration


def cli(data_dir: Path, *args: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)  # the commands make no data directory
    subprocess.run(
        [sys.executable, "-m", "coordinator.commands.cli", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        check=True,
        timeout=60,
    )


def metadata(port: int) -> Any:
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.settimeout(20)
        sock.sendall(encode_request(MetadataRequest(topics=None), 12, 1, "t"))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = sock.recv(size, socket.MSG_WAITALL)
    return decode_response(BY_KEY[3], 12, frame)[1]


@pytest.mark.parametrize("password", ["front-pw-31", "wrong"])
def test_the_daemon_logs_in_to_its_upstream_with_its_own_settings(
    tmp_path: Path, start_daemon: Callable[..., Daemon], password: str
) -> None:
    """The upstream here is a daemon of ours with virtual topics behind SASL_SSL (SCRAM):
    it serves Metadata, which is all this needs."""
    pki = make_pki(tmp_path / "pki")
    upstream = Daemon(tmp_path / "upstream")
    secure = free_port()
    cli(upstream.data_dir, "users", "add", "front", "--password", "front-pw-31",
        "--mechanism", "SCRAM-SHA-512")  # fmt: skip
    upstream.args = (
        "--listener", f"PLAINTEXT://{upstream.bootstrap}",
        "--listener", f"SASL_SSL://127.0.0.1:{secure}",
        "--ssl-certfile", str(pki.server_cert),
        "--ssl-keyfile", str(pki.server_key),
        "--sasl-enabled-mechanisms", "SCRAM-SHA-512",
        "--topic", "vt:3",
    )  # fmt: skip
    (tmp_path / "upstream").mkdir(exist_ok=True)
    upstream.start()
    try:
        front = start_daemon(
            "--store", "memory",
            "--upstream", f"127.0.0.1:{secure}",
            "--upstream-security-protocol", "SASL_SSL",
            "--upstream-sasl-mechanism", "SCRAM-SHA-512",
            "--upstream-sasl-username", "front",
            "--upstream-sasl-password", password,
            "--upstream-tls-ca", str(pki.ca),
            "--upstream-metadata-refresh-ms", "300",
        )  # fmt: skip
        if password == "wrong":
            assert wait_until(lambda: "refused the daemon's login" in front.log(), 20)
            assert "vt" not in [t.name for t in metadata(front.port).topics]
            return
        answer = metadata(front.port)
        assert [(t.name, len(t.partitions)) for t in answer.topics] == [("vt", 3)]
        assert answer.topics[0].partitions[0].leader_id == 1000  # upstream node 0, moved
        brokers = {b.node_id: b.port for b in answer.brokers}
        assert brokers[0] == front.port and brokers[1000] not in (front.port, secure)
        assert "unreachable" not in front.log()
    finally:
        upstream.stop()


@pytest.mark.skipif(servers.tansu_binary() is None, reason="no tansu binary")
def test_topic_acls_gate_forwarded_produce_fetch_and_metadata(
    tmp_path: Path, start_daemon: Callable[..., Daemon]
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    tansu = servers.start_tansu()
    assert tansu is not None
    try:
        direct = AdminClient({"bootstrap.servers": f"127.0.0.1:{tansu.port}"})
        for future in direct.create_topics(
            [NewTopic(n, 1, 1) for n in ("open", "closed")]
        ).values():
            future.result(30)
        data_dir = tmp_path / "data"
        cli(data_dir, "users", "add", "alice", "--password", "alice-pw")
        for operation in ("read", "write"):
            cli(data_dir, "acls", "add", "--principal", "User:alice", "--operation", operation,
                "--topic", "open")  # fmt: skip
        cli(data_dir, "acls", "add", "--principal", "User:alice", "--operation", "read",
            "--group", "g")  # fmt: skip
        sasl = free_port()
        daemon = Daemon(tmp_path)
        daemon.args = (
            "--listener", f"PLAINTEXT://{daemon.bootstrap}",
            "--listener", f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "--sasl-enabled-mechanisms", "PLAIN",
            "--acls-enabled",
            "--upstream", f"127.0.0.1:{tansu.port}",
            "--upstream-metadata-refresh-ms", "300",
        )  # fmt: skip
        daemon.start()
        try:
            alice = {
                "bootstrap.servers": f"127.0.0.1:{sasl}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "alice-pw",
            }
            listed = AdminClient(alice).list_topics(timeout=20)
            assert set(listed.topics) == {"open"}  # "closed" is not hers to see

            results: dict[str, Any] = {}
            producer = Producer({**alice, "message.timeout.ms": 15000, "retries": 0})
            for topic in ("open", "closed"):
                producer.produce(
                    topic, b"x", on_delivery=lambda e, m: results.__setitem__(m.topic(), e)
                )
            producer.flush(30)
            assert results["open"] is None
            assert results["closed"] is not None and "AUTHORIZATION" in results["closed"].name()

            consumer = Consumer({**alice, "group.id": "g", "enable.auto.commit": False})
            try:
                consumer.assign([TopicPartition("open", 0, 0), TopicPartition("closed", 0, 0)])
                seen = []
                for _ in range(20):  # a few seconds: "closed" has a record too
                    m = consumer.poll(0.5)
                    if m is not None and m.error() is None:
                        seen.append(m.topic())
                assert seen == ["open"]  # the record in "closed" never reaches her
            finally:
                consumer.close()
            # A Fetch naming both: "open" is forwarded and answered by the upstream,
            # "closed" refused by the daemon, in one answer.
            answer = asyncio.run(fetch_both(sasl))
            codes = {t.topic: t.partitions[0].error_code for t in answer.responses}
            assert codes == {"open": 0, "closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
            records = {t.topic: t.partitions[0].records for t in answer.responses}
            assert records["open"] and not records["closed"]

            # acks=0 (checked against her ACLs, then forwarded with no answer due).
            fire = Producer({**alice, "acks": 0})
            fire.produce("open", b"unanswered")
            fire.flush(10)
            direct_reader = Consumer(
                {"bootstrap.servers": f"127.0.0.1:{tansu.port}", "group.id": "direct"}
            )
            direct_reader.assign([TopicPartition("open", 0, 0)])
            values: list[bytes] = []
            for _ in range(40):
                values += [m.value() for m in direct_reader.consume(10, 0.5) if not m.error()]
                if b"unanswered" in values:
                    break
            direct_reader.close()
            assert b"unanswered" in values

            delivered: list[Any] = []
            idempotent = Producer({**alice, "enable.idempotence": True})
            idempotent.produce("open", b"once", on_delivery=lambda e, _m: delivered.append(e))
            assert idempotent.flush(30) == 0
            assert delivered == [None]  # InitProducerId with ACLs on: forwarded
        finally:
            daemon.stop()
    finally:
        tansu.stop()


async def fetch_both(port: int) -> Any:
    from coordinator.client.connection import connect
    from protocol.apis.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
    from tests.wire import sasl_login

    c = await connect("127.0.0.1", port)
    try:
        login = await sasl_login(c, "alice", "alice-pw", "PLAIN")
        assert login.error_code == 0
        body = FetchRequest(  # as librdkafka: a new fetch session (Tansu answers a
            max_wait_ms=500,  # sessionless fetch with no partition at all)
            min_bytes=1,
            session_epoch=0,
            topics=[
                FetchTopic(
                    topic=name,
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=65536)
                    ],
                )
                for name in ("open", "closed")
            ],
        )
        return await asyncio.wait_for(c.request(body, 12, FetchResponse), 20)
    finally:
        c.close()
