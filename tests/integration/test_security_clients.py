"""kafka-python, aiokafka and confluent-kafka consumers over SASL_SSL with SCRAM-SHA-512,
against a daemon whose users and ACLs were set up with the ``users``/``acls`` commands."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.client.connection import KafkaConnectionClient
from protocol.errors import ErrorCode
from tests import wire
from tests.pki import Pki, make_pki

from .clients import LIBRARIES, Member
from .conftest import Daemon, free_port, wait_until

pytestmark = pytest.mark.integration

TOPIC = "t6"
PASSWORDS = {"alice": "alice-pw-9f2", "bob": "bob-pw-4c1", "admin": "admin-pw-77a"}


def cli(data_dir: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "coordinator.commands.cli", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout


class SecureDaemon:
    def __init__(self, tmp: Path) -> None:
        self.pki: Pki = make_pki(tmp / "pki")
        self.daemon = Daemon(tmp)
        self.sasl_ssl_port = free_port()
        self.sasl_ssl = f"127.0.0.1:{self.sasl_ssl_port}"
        data = self.daemon.data_dir
        data.mkdir(parents=True, exist_ok=True)  # the commands make no data directory
        for user, password in PASSWORDS.items():
            cli(data, "users", "add", user, "--password", password)
        cli(data, "acls", "add", "--principal", "User:alice", "--operation", "read",
            "--group", "alice-", "--pattern-type", "prefixed")  # fmt: skip
        cli(data, "acls", "add", "--principal", "User:*", "--operation", "read", "--topic", TOPIC)
        # The readiness check connects to the PLAINTEXT listener on the daemon's port.
        self.daemon.args = (
            "--listener", f"PLAINTEXT://{self.daemon.bootstrap}",
            "--listener", f"SASL_SSL://{self.sasl_ssl}",
            "--ssl-certfile", str(self.pki.server_cert),
            "--ssl-keyfile", str(self.pki.server_key),
            "--sasl-enabled-mechanisms", "SCRAM-SHA-512",
            "--acls-enabled",
            "--super-users", "User:admin",
            # Clients retry failed logins; the throttle has its own tests (test_throttle).
            "--max-failed-authentications", "1000",
            "--topic", f"{TOPIC}:6",
            "--group-initial-rebalance-delay-ms", "0",
            "--journal-dir", str(tmp / "journal"),
        )  # fmt: skip
        self.journal_dir = tmp / "journal"

    def client_config(self, lib: str, user: str, password: str) -> dict[str, Any]:
        ca = str(self.pki.ca)
        if lib == "confluent-kafka":
            return {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": user,
                "sasl.password": password,
                "ssl.ca.location": ca,
            }
        common = {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        }
        if lib == "aiokafka":
            return {**common, "ssl_context": ssl.create_default_context(cafile=ca)}
        # A failed login makes kafka-python retry its bootstrap; give up after 5 s.
        return {**common, "ssl_cafile": ca, "bootstrap_timeout_ms": 5000}

    def member(self, lib: str, group: str, user: str, password: str) -> Member:
        return LIBRARIES[lib](
            self.sasl_ssl,
            group,
            TOPIC,
            client_id=f"{lib}-{user}",
            config=self.client_config(lib, user, password),
        )

    def as_admin(self, action: Any) -> Any:
        async def go() -> Any:
            loop = asyncio.get_running_loop()
            tls = ssl.create_default_context(cafile=str(self.pki.ca))
            _, c = await loop.create_connection(
                KafkaConnectionClient, "127.0.0.1", self.sasl_ssl_port, ssl=tls,
                server_hostname="127.0.0.1",
            )  # fmt: skip
            assert (
                await wire.sasl_login(c, "admin", PASSWORDS["admin"])
            ).error_code == ErrorCode.NONE
            try:
                return await action(c)
            finally:
                c.close()

        return asyncio.run(go())


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureDaemon]:
    d = SecureDaemon(tmp_path_factory.mktemp("secure"))
    d.daemon.start()
    yield d
    d.daemon.stop()


@pytest.fixture(params=sorted(LIBRARIES))
def lib(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _error_text(m: Member) -> str:
    return " ".join(map(repr, [m.error, *m.errors])).upper()


def failure_of(start: Callable[[], Member], marker: str) -> str:
    """What went wrong for a member that must not get anywhere: the error its library
    raised at start, or reported within 30 s (it must never be assigned anything)."""
    try:
        member = start()
    except Exception as exc:  # aiokafka fails in start()
        return repr(exc).upper()
    try:
        wait_until(lambda: marker in _error_text(member), 30)
        assert not member.assigned
        return _error_text(member)
    finally:
        member.close()


def test_scram_sha_512_over_tls_join_commit_and_keep_others_out(
    lib: str, secure: SecureDaemon
) -> None:
    group = f"alice-{lib}"
    alice = secure.member(lib, group, "alice", PASSWORDS["alice"])
    try:
        assert wait_until(lambda: len(alice.assigned) == 6 or alice.error is not None, 30), (
            alice.error,
            alice.errors,
        )
        assert alice.error is None, alice.error
        alice.commit({(TOPIC, 0): 11})
        assert alice.committed((TOPIC, 0)) == 11

        # bob authenticates, but has no READ on alice's group: an authorization error.
        text = failure_of(lambda: secure.member(lib, group, "bob", PASSWORDS["bob"]), "AUTHORIZ")
        assert "GROUP" in text and "AUTHORIZATION" in text, text

        # alice's group is untouched: one member (hers), her commit.
        described = secure.as_admin(lambda c: wire.describe(c, group))
        [g] = described.groups
        assert g.group_state == "Stable" and [m.client_id for m in g.members] == [f"{lib}-alice"]
        offsets = secure.as_admin(lambda c: wire.fetch(c, group))
        assert offsets[(TOPIC, 0)][0] == 11
    finally:
        alice.close()


def test_wrong_password_is_an_authentication_error(
    lib: str, secure: SecureDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    text = failure_of(
        lambda: secure.member(lib, f"alice-wrong-{lib}", "alice", "not-the-password"),
        "INVALID CREDENTIALS",
    )
    # aiokafka raises "unable to bootstrap" and logs the broker's SASL error beside it.
    text += caplog.text.upper()
    assert "AUTHENTICATION FAILED: INVALID CREDENTIALS" in text, text  # the daemon's words


def test_no_secret_in_the_daemon_log_or_journal(secure: SecureDaemon) -> None:
    async def wrong_then_right(c: KafkaConnectionClient) -> None:
        loop = asyncio.get_running_loop()
        tls = ssl.create_default_context(cafile=str(secure.pki.ca))
        _, other = await loop.create_connection(
            KafkaConnectionClient, "127.0.0.1", secure.sasl_ssl_port, ssl=tls,
            server_hostname="127.0.0.1",
        )  # fmt: skip
        failed = await wire.sasl_login(other, "bob", "not-the-password")
        assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        await wire.commit(c, "admin-journaled", {(TOPIC, 0): (1, "meta")})  # a journal entry

    secure.as_admin(wrong_then_right)  # the admin's own login succeeded
    log = secure.daemon.log()
    assert "authenticated" in log and "authentication failed" in log
    for secret in (*PASSWORDS.values(), "not-the-password"):
        assert secret not in log
    assert ",p=" not in log  # no SCRAM client proof
    assert wait_until(
        lambda: (
            "admin-journaled"
            in "".join(p.read_text() for p in secure.journal_dir.glob("journal-*"))
        ),
        5,
    )
    journal = "".join(p.read_text() for p in secure.journal_dir.glob("journal-*"))
    for secret in (*PASSWORDS.values(), "not-the-password"):
        assert secret not in journal
    assert ",p=" not in journal
