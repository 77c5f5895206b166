"""``users`` and ``acls`` edit the store (SQLite, or PostgreSQL by URL); ``serve`` options."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from coordinator.commands import cli
from coordinator.security.config import ClientAuth, Listener, SecurityProtocol
from coordinator.settings.config import Settings
from coordinator.store import SqliteStore

PASSWORD = "Tr0ub4dor&3-unique"


def run(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(cli.main, list(args), input=input, env={})


def test_users_are_stored_salted_never_in_plain(tmp_path: Path) -> None:
    data = str(tmp_path)
    result = run("users", "add", "alice", "--password", PASSWORD, "--data-dir", data)
    assert result.exit_code == 0, result.output
    # The password can also be typed at a prompt (twice).
    result = run("users", "add", "bob", "--data-dir", data, input=f"{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    listed = run("users", "list", "--data-dir", data)
    assert "alice  SCRAM-SHA-256(iterations=4096) SCRAM-SHA-512(iterations=4096)" in listed.output
    assert "bob" in listed.output
    for path in tmp_path.iterdir():  # the database and its WAL
        assert PASSWORD.encode() not in path.read_bytes()
    result = run("users", "delete", "alice", "--mechanism", "SCRAM-SHA-256", "--data-dir", data)
    assert result.exit_code == 0, result.output
    assert (
        "alice  SCRAM-SHA-512(iterations=4096)\n" in run("users", "list", "--data-dir", data).output
    )
    assert run("users", "delete", "carol", "--data-dir", data).exit_code == 1


async def test_a_running_store_sees_what_the_commands_wrote(tmp_path: Path) -> None:
    # The commands run their own event loop: in a thread beside this one.
    await asyncio.to_thread(
        run, "users", "add", "alice", "--password", PASSWORD, "--data-dir", str(tmp_path)
    )
    acl = ["--principal", "User:alice", "--operation", "READ", "--operation", "DESCRIBE"]
    group = ["--group", "alice-", "--pattern-type", "prefixed", "--data-dir", str(tmp_path)]
    assert (await asyncio.to_thread(run, "acls", "add", *acl, *group)).exit_code == 0
    store = SqliteStore(tmp_path)
    state = await store.open()
    assert {c.mechanism for c in state.security.credentials} == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert len(state.security.acls) == 2
    listed = (await asyncio.to_thread(run, "acls", "list", "--data-dir", str(tmp_path))).output
    assert "ALLOW User:alice READ GROUP:PREFIXED:alice- host=*" in listed
    # Removed while the store is open: a re-read (as the daemon does) sees it gone.
    assert (await asyncio.to_thread(run, "acls", "remove", *acl[:4], *group)).exit_code == 0
    rows = await store.read_security()
    assert [a.operation.name for a in rows.acls] == ["DESCRIBE"]
    await store.close()


@pytest.mark.parametrize(
    "args",
    [
        ["--principal", "alice", "--operation", "READ", "--group", "g"],
        ["--principal", "User:a", "--operation", "READ"],
        ["--principal", "User:a", "--operation", "READ", "--group", "g", "--topic", "t"],
        ["--principal", "User:a", "--operation", "READ", "--topic", "*", "--pattern-type",
         "prefixed"],
    ],
    ids=["bad-principal", "no-resource", "two-resources", "prefixed-wildcard"],
)  # fmt: skip
def test_bad_acls_are_refused(tmp_path: Path, args: list[str]) -> None:
    result = run("acls", "add", *args, "--data-dir", str(tmp_path))
    assert result.exit_code == 2, result.output


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    seen: list[Settings] = []

    def fake_run(coro: Any) -> None:
        seen.append(coro.cr_frame.f_locals["settings"])
        coro.close()

    monkeypatch.setattr("uvloop.run", fake_run)
    monkeypatch.setattr("coordinator.telemetry.logs.configure", lambda *a: None)
    return seen


def test_listeners_with_their_own_advertised_addresses(
    captured: list[Settings], tmp_path: Path
) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    result = run(
        "serve",
        "--listener", "PLAINTEXT://127.0.0.1:9092",
        "--listener", "sasl_ssl://0.0.0.0:9094",
        "--advertised-listener", "SASL_SSL://kafka.example:19094",
        "--ssl-certfile", str(cert),
        "--ssl-client-auth", "requested",
        "--sasl-enabled-mechanisms", "PLAIN,scram-sha-512",
        "--acls-enabled",
        "--super-users", "User:admin;User:ops",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.effective_listeners == (
        Listener(SecurityProtocol.PLAINTEXT, "127.0.0.1", 9092),
        Listener(SecurityProtocol.SASL_SSL, "0.0.0.0", 9094, ("kafka.example", 19094)),
    )
    assert s.security.ssl_client_auth == ClientAuth.REQUESTED
    assert s.security.sasl_enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert s.security.acls_enabled and s.security.super_users == {"User:admin", "User:ops"}


def test_the_single_listener_options_still_work(captured: list[Settings]) -> None:
    result = run("serve", "--listen", "127.0.0.1:9300", "--advertised-listener", "h.example:1")
    assert result.exit_code == 0, result.output
    [s] = captured
    assert s.effective_listeners == (
        Listener(SecurityProtocol.PLAINTEXT, "127.0.0.1", 9300, ("h.example", 1)),
    )
    assert not s.security.acls_enabled


@pytest.mark.parametrize(
    "args",
    [
        ["--listener", "TLS://127.0.0.1:1"],
        ["--listener", "SSL://127.0.0.1:1"],  # no certificate
        ["--listener", "SSL://h:1", "--listener", "SSL://h:2"],
        ["--listener", "PLAINTEXT://h:1", "--advertised-listener", "SSL://h:2"],
        ["--sasl-enabled-mechanisms", "GSSAPI"],
        ["--super-users", "admin"],
    ],
    ids=["unknown-protocol", "ssl-without-cert", "duplicate", "stray-advertised", "gssapi",
         "bad-super-user"],
)  # fmt: skip
def test_bad_security_options_are_refused(captured: list[Settings], args: list[str]) -> None:
    result = run("serve", *args)
    assert result.exit_code == 2, result.output
    assert not captured


async def test_the_commands_edit_a_postgres_store_given_its_url(postgres: Any) -> None:
    url = postgres.create_database("admin_cli")
    added = await asyncio.to_thread(
        run, "users", "add", "alice", "--password", PASSWORD, "--database-url", url
    )
    assert added.exit_code == 0, added.output
    listed = await asyncio.to_thread(run, "users", "list", "--database-url", url)
    assert "alice  SCRAM-SHA-256(iterations=4096)" in listed.output
    from coordinator.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        rows = (await store.open()).security
    finally:
        await store.close()
    assert {c.username for c in rows.credentials} == {"alice"}


@pytest.mark.parametrize(
    "command",
    [
        ["users", "list"],
        ["users", "add", "bob", "--password", PASSWORD],
        ["users", "delete", "bob"],
        ["acls", "list"],
        ["acls", "add", "--principal", "User:bob", "--operation", "READ", "--topic", "t"],
    ],
)
def test_a_data_dir_that_does_not_exist_is_refused_and_nothing_is_made(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "dta"
    result = run(*command, "--data-dir", str(typo))
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: --data-dir '{typo}' is not a directory: give the daemon's --data-dir (it is"
        f" made when the daemon first starts; before that: mkdir {typo})"
    ]
    assert list(tmp_path.iterdir()) == []


def test_reading_a_directory_with_no_store_is_refused_and_an_empty_store_says_so(
    tmp_path: Path,
) -> None:
    listed = run("users", "list", "--data-dir", str(tmp_path))
    assert listed.exit_code == 2 and "holds no store (coordinator.sqlite3)" in listed.output
    assert list(tmp_path.iterdir()) == []  # nothing made
    acl = ["--principal", "User:bob", "--operation", "READ", "--topic", "t"]
    assert run("acls", "add", *acl, "--data-dir", str(tmp_path)).exit_code == 0
    listed = run("users", "list", "--data-dir", str(tmp_path))
    assert (listed.exit_code, listed.output) == (
        0,
        f"no users in {tmp_path} (add one: users add NAME)\n",
    )
    none_for = run("acls", "list", "--principal", "User:carol", "--data-dir", str(tmp_path))
    assert none_for.output == f"no ACLs for User:carol in {tmp_path}\n"
