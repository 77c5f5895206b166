"""The console's failed logins are counted apart from the Kafka listeners', and behind a
trusted proxy per client address, not per proxy; one user's sessions are capped, not
everyone's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from coordinator.client.connection import KafkaConnectionClient
from coordinator.shell.server import Server
from protocol.errors import ErrorCode
from tests.coordinator.console.helpers import base_url, get_json
from tests.coordinator.console.test_actions import acl_server
from tests.wire import sasl_login


async def fail_logins(
    srv: Server, users: int, headers: dict[str, str] | None = None, first: int = 0
) -> None:
    """Wrong passwords for ``users`` user names (user-FIRST, ...)."""
    async with aiohttp.ClientSession(base_url(srv)) as http:
        for i in range(first, first + users):
            async with http.post(
                "/login",
                data={"username": f"user-{i}", "password": "guess"},
                headers=headers or {},
                allow_redirects=False,
            ) as resp:
                assert resp.status == 303


async def console_login(srv: Server, headers: dict[str, str] | None = None) -> bool:
    async with (
        aiohttp.ClientSession(base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        http.post(
            "/login",
            data={"username": "alice", "password": "alice-secret"},
            headers=headers or {},
            allow_redirects=False,
        ) as resp,
    ):
        return "Set-Cookie" in resp.headers


async def kafka_login(srv: Server, mechanism: str) -> int:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(
        KafkaConnectionClient, "127.0.0.1", srv.port_of("SASL_PLAINTEXT")
    )
    try:
        return (await sasl_login(client, "alice", "alice-secret", mechanism)).error_code
    finally:
        client.close()


async def test_failed_console_logins_lock_no_kafka_login_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch, sasl=True, failed_login_delay_ms=0)
    try:
        # 55 user names from one address: past the console's per-address limit (50)...
        await fail_logins(srv, 55)
        assert not await console_login(srv)
        # ...while the Kafka listener, from the same address, still checks alice's password.
        for mechanism in ("PLAIN", "SCRAM-SHA-256"):
            assert await kafka_login(srv, mechanism) == ErrorCode.NONE, mechanism
    finally:
        await srv.stop()


async def test_behind_a_trusted_proxy_each_client_address_has_its_own_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(
        tmp_path, monkeypatch, failed_login_delay_ms=0, trusted_proxies=("127.0.0.1",)
    )
    try:
        await fail_logins(srv, 55, {"X-Forwarded-For": "203.0.113.7"})
        assert not await console_login(srv, {"X-Forwarded-For": "203.0.113.7"})
        # Another client of the same proxy is not the guesser.
        assert await console_login(srv, {"X-Forwarded-For": "198.51.100.2"})
    finally:
        await srv.stop()


async def test_a_forwarded_address_from_an_untrusted_peer_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch, failed_login_delay_ms=0)
    try:
        # Without --http-trusted-proxy a client cannot pick a fresh address per guess.
        for i in range(55):
            await fail_logins(srv, 1, {"X-Forwarded-For": f"203.0.113.{i}"}, first=i)
        assert not await console_login(srv, {"X-Forwarded-For": "198.51.100.2"})
    finally:
        await srv.stop()


async def test_one_user_logging_in_again_and_again_ends_only_their_own_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch, max_sessions_per_user=3)
    try:
        root = aiohttp.ClientSession(base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True))
        async with root:
            async with root.post("/login", data={"username": "root", "password": "root-secret"}):
                pass
            alice_sessions = []
            for _ in range(5):
                jar = aiohttp.CookieJar(unsafe=True)
                http = aiohttp.ClientSession(base_url(srv), cookie_jar=jar)
                async with http.post(
                    "/login", data={"username": "alice", "password": "alice-secret"}
                ):
                    pass
                alice_sessions.append(http)
            try:
                statuses = []
                for http in alice_sessions:
                    async with http.get("/api/groups") as resp:
                        statuses.append(resp.status)
                assert statuses == [401, 401, 200, 200, 200]  # her oldest two ended
                await get_json(root, "/api/groups")  # root's session is untouched
            finally:
                for http in alice_sessions:
                    await http.close()
    finally:
        await srv.stop()


async def test_a_kafka_login_from_an_address_others_failed_from_is_not_locked_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failures throttle (answers come later), they lock nobody out: after 50 user names
    failed from one address (its allowance, 10 x 5), alice's right password gets in."""
    srv = await acl_server(tmp_path, monkeypatch, sasl=True, failed_login_delay_ms=0)
    try:
        loop = asyncio.get_running_loop()
        for i in range(50):
            _, client = await loop.create_connection(
                KafkaConnectionClient, "127.0.0.1", srv.port_of("SASL_PLAINTEXT")
            )
            try:
                await sasl_login(client, f"user-{i}", "guess", "PLAIN")
            finally:
                client.close()
        assert await kafka_login(srv, "PLAIN") == ErrorCode.NONE
    finally:
        await srv.stop()
