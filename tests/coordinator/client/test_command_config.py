"""The admin commands against secured listeners (``--command-config FILE``, a Kafka client
properties file, as Kafka's tools take), and their one-line answers to the mistakes a new
user makes: the console's port, a state that is none, a group that does not exist."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog
from click.testing import CliRunner, Result

from coordinator.client.consumer_member import ConsumerGroupMember
from coordinator.commands import cli
from coordinator.console.settings import ConsoleSettings
from coordinator.group.config import GroupConfig
from coordinator.security.config import Listener, SecurityProtocol, SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from coordinator.store import MemoryStore, Write
from tests.pki import Pki, make_pki

P = SecurityProtocol
PASSWORD = "alice-secret-1"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def server(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Server]:
    # The daemon's log would go to the commands' captured output (one process).
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    store = MemoryStore()
    store.write(Write(credentials=[make_credential("alice", PASSWORD, "SCRAM-SHA-512")]))
    monkeypatch.setattr("coordinator.shell.server.open_store", lambda _settings: store)
    srv = Server(
        Settings(
            data_dir=tmp_path,
            topics=(("t", 2),),
            group=GroupConfig(initial_rebalance_delay_ms=0),
            listeners=(
                Listener(P.PLAINTEXT, "127.0.0.1", 0),
                Listener(P.SASL_PLAINTEXT, "127.0.0.1", 0),
                Listener(P.SSL, "127.0.0.1", 0),
                Listener(P.SASL_SSL, "127.0.0.1", 0),
            ),
            security=SecuritySettings(
                ssl_certfile=pki.server_cert,
                ssl_keyfile=pki.server_key,
                sasl_enabled_mechanisms=("SCRAM-SHA-512",),
            ),
        )
    )
    await srv.start()
    yield srv
    await srv.stop()
    structlog.reset_defaults()


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(lambda: CliRunner().invoke(cli.main, list(args), env={}))


def properties(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def sasl_config(tmp_path: Path, password: str) -> str:
    return properties(
        tmp_path / "sasl.properties",
        "# as for kafka-consumer-groups.sh\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{password}";\n',
    )


async def test_groups_list_over_sasl_scram_and_over_tls(
    server: Server, pki: Pki, tmp_path: Path
) -> None:
    member = ConsumerGroupMember(f"127.0.0.1:{server.port_of('PLAINTEXT')}", "secured", ["t"])
    await member.start()
    try:
        sasl = f"127.0.0.1:{server.port_of('SASL_PLAINTEXT')}"
        listed = await invoke(
            "groups", "list", "--bootstrap", sasl, "--command-config",
            sasl_config(tmp_path, PASSWORD), "--json",
        )  # fmt: skip
        assert listed.exit_code == 0, listed.output
        assert [g["group"] for g in json.loads(listed.stdout)] == ["secured"], listed.output
        described = await invoke(
            "groups", "describe", "secured", "--bootstrap", sasl,
            "--command-config", sasl_config(tmp_path, PASSWORD),
        )  # fmt: skip
        assert described.exit_code == 0 and member.member_id in described.output

        tls = properties(
            tmp_path / "ssl.properties",
            f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n",
        )
        over_tls = await invoke(
            "groups", "list", "--bootstrap", f"127.0.0.1:{server.port_of('SSL')}",
            "--command-config", tls, "--json",
        )  # fmt: skip
        assert over_tls.exit_code == 0, over_tls.output
        assert [g["group"] for g in json.loads(over_tls.stdout)] == ["secured"], over_tls.output
        # SASL over TLS, in librdkafka's words (as a confluent-kafka user's file has them).
        both = properties(
            tmp_path / "librdkafka.properties",
            "security.protocol=sasl_ssl\nsasl.mechanisms=SCRAM-SHA-512\n"
            f"sasl.username=alice\nsasl.password={PASSWORD}\n"
            f"ssl.ca.location={pki.ca}\n",
        )
        over_both = await invoke(
            "groups", "list", "--bootstrap", f"127.0.0.1:{server.port_of('SASL_SSL')}",
            "--command-config", both, "--json",
        )  # fmt: skip
        assert over_both.exit_code == 0, over_both.output
        assert [g["group"] for g in json.loads(over_both.stdout)] == ["secured"]
        # Without the CA, the broker's certificate is not trusted: said in one line.
        untrusted = await invoke(
            "groups", "list", "--bootstrap", f"127.0.0.1:{server.port_of('SSL')}",
            "--command-config", properties(tmp_path / "no-ca.properties", "security.protocol=SSL"),
        )  # fmt: skip
        assert untrusted.exit_code == 1 and len(untrusted.output.splitlines()) == 1
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.output
    finally:
        await member.close()


async def test_a_wrong_password_is_one_line_naming_the_listener_and_mechanism(
    server: Server, tmp_path: Path
) -> None:
    sasl = f"127.0.0.1:{server.port_of('SASL_PLAINTEXT')}"
    refused = await invoke(
        "groups", "list", "--bootstrap", sasl, "--command-config",
        sasl_config(tmp_path, "not-the-password"),
    )  # fmt: skip
    assert refused.exit_code == 1
    (line,) = refused.output.splitlines()
    assert line.startswith(
        f"Error: {sasl} (SASL_PLAINTEXT, SASL mechanism SCRAM-SHA-512, user 'alice'):"
        " Authentication failed"
    ), line
    # Without any: the closed connection says what is missing.
    bare = await invoke("groups", "list", "--bootstrap", sasl)
    assert bare.exit_code == 1 and len(bare.output.splitlines()) == 1
    assert "a SASL or SSL listener needs --command-config FILE" in bare.output


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("security.protocol=SASL_PLAIN\n", "security.protocol=SASL_PLAIN: expected one of"),
        ("security.protocol=SASL_SSL\n", "sasl.mechanism=GSSAPI is not supported"),
        (
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n",
            "SASL needs a user name and password",
        ),
        (
            "security.protocol=SSL\nssl.truststore.location=ts.jks\nssl.truststore.type=JKS\n",
            "ssl.truststore.type=JKS is not supported: give PEM files",
        ),
    ],
)
def test_a_command_config_kafka_would_not_take_is_refused_in_one_line(
    tmp_path: Path, text: str, said: str
) -> None:
    path = properties(tmp_path / "client.properties", text)
    result = CliRunner().invoke(
        cli.main, ["groups", "list", "--command-config", path, "--bootstrap", "127.0.0.1:1"]
    )
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(f"Error: --command-config {path}: {said}"), line


@pytest.mark.integration
async def test_the_consoles_port_is_said_to_be_no_kafka_listener_without_a_traceback() -> None:
    """The README puts the console's port beside the listener's: a likely mix-up."""
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            console=ConsoleSettings(listen=("127.0.0.1", 0)),
        )
    )
    await srv.start()
    try:
        assert srv.console is not None and srv.console.port is not None
        web = f"127.0.0.1:{srv.console.port}"
        for command in (["groups", "list"], ["offsets", "get", "g"]):
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "coordinator.commands.cli", *command, "--bootstrap", web],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert (done.returncode, done.stdout) == (1, "")
            (line,) = done.stderr.splitlines()
            assert line.endswith(f"{web} is not a Kafka listener (it answered HTTP)"), line
    finally:
        await srv.stop()


def test_an_unknown_state_is_refused_naming_the_states() -> None:
    result = CliRunner().invoke(cli.main, ["groups", "list", "--state", "Bogus"])
    assert (result.exit_code, result.output) == (
        2,
        "Error: --state 'Bogus' is not a group state: give one of Empty, Stable,"
        " PreparingRebalance, CompletingRebalance, Assigning, Reconciling, Dead\n",
    )


async def test_a_missing_group_fails_alike_and_a_busy_one_is_explained(server: Server) -> None:
    bootstrap = f"127.0.0.1:{server.port_of('PLAINTEXT')}"
    for command in (["offsets", "get"], ["groups", "describe"], ["groups", "delete"]):
        missing = await invoke(*command, "nosuchgroup", "--bootstrap", bootstrap)
        assert (missing.exit_code, missing.output) == (
            1,
            "Error: Consumer group 'nosuchgroup' does not exist.\n",
        ), command
    listed = await invoke("groups", "list", "--state", "stable", "--bootstrap", bootstrap)
    assert listed.exit_code == 0  # states are matched as Kafka's tool does, in any case
    member = ConsumerGroupMember(bootstrap, "busy", ["t"])
    await member.start()
    try:
        busy = await invoke("groups", "delete", "busy", "--bootstrap", bootstrap)
    finally:
        await member.close()
    assert busy.exit_code == 1
    assert busy.output == (
        "Error: group 'busy' has members: only an Empty group can be deleted (stop its"
        " consumers first; `groups describe busy` lists them)\n"
    )


async def test_the_conformance_suite_runs_over_a_sasl_listener(
    server: Server, tmp_path: Path
) -> None:
    sasl = f"127.0.0.1:{server.port_of('SASL_PLAINTEXT')}"
    ran = await invoke(
        "conformance", "--bootstrap", sasl, "--command-config", sasl_config(tmp_path, PASSWORD),
        "--only", "*testFindCoordinatorNamesABrokerFromMetadata", "--topic", "t",
        "--initial-rebalance-delay-ms", "0", "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    assert report["summary"] == {"pass": 1, "fail": 0, "skip": 0}, report


def test_pem_settings_given_inline_or_as_files_are_loaded(pki: Pki, tmp_path: Path) -> None:
    from coordinator.client.security import security_from_properties

    cert, key = pki.client("carol")
    inline = security_from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": pki.ca.read_text(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": cert.read_text(),
            "ssl.keystore.key": key.read_text(),
        }
    )
    assert inline.tls is not None and len(inline.tls.get_ca_certs()) == 1
    # Kafka's keystore file: key and chain in one PEM file, relative to the properties.
    (tmp_path / "carol.pem").write_text(key.read_text() + cert.read_text())
    (tmp_path / "ca.pem").write_text(pki.ca.read_text())
    files = security_from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": "ca.pem",
            "ssl.keystore.location": "carol.pem",
            "ssl.endpoint.identification.algorithm": "",
        },
        tmp_path,
    )
    assert files.tls is not None and not files.tls.check_hostname
    assert len(files.tls.get_ca_certs()) == 1
