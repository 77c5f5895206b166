"""Who may address the console: allowed hosts (DNS rebinding), the origin behind a TLS
proxy, the client's address from a trusted proxy only, and logins from the console's own
pages only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import make_mocked_request

from coordinator.console.addressing import Addressing
from coordinator.console.settings import ConsoleSettings
from coordinator.shell.server import Server
from tests.coordinator.console.helpers import base_url, settings, simple_group, started
from tests.coordinator.console.test_actions import acl_server


async def console_with(tmp_path: Path, **options: object) -> Server:
    s = settings(tmp_path, admin=True)
    console = dataclasses.replace(s.console, **options)  # type: ignore[arg-type]
    return await started(dataclasses.replace(s, console=console))


async def status(http: aiohttp.ClientSession, path: str, host: str) -> int:
    async with http.get(path, headers={"Host": host}, allow_redirects=False) as resp:
        return resp.status


async def test_a_rebound_host_name_is_refused_and_the_listen_address_is_answered(
    tmp_path: Path,
) -> None:
    srv = await console_with(tmp_path)
    port = srv.console.port  # type: ignore[union-attr]
    try:
        simple_group(srv, "kept")
        async with aiohttp.ClientSession(base_url(srv)) as http:
            # A page on rebind.example whose name now resolves to 127.0.0.1.
            assert await status(http, "/api/groups", f"rebind.example:{port}") == 400
            assert await status(http, "/", f"rebind.example:{port}") == 400
            async with http.post(
                "/api/actions/delete-group",
                json={"group": "kept"},
                headers={
                    "Host": f"rebind.example:{port}",
                    "Origin": f"http://rebind.example:{port}",
                },
            ) as resp:
                assert resp.status == 400
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
                assert await status(http, "/api/groups", host) == 200, host
        assert "kept" in srv.runtime.groups.groups  # type: ignore[union-attr]
    finally:
        await srv.stop()


async def test_allowed_hosts_as_django_has_them(tmp_path: Path) -> None:
    srv = await console_with(tmp_path, allowed_hosts=(".example.com", "console.internal"))
    try:
        async with aiohttp.ClientSession(base_url(srv)) as http:
            for host, expected in (
                ("example.com", 200),
                ("a.example.com:8080", 200),
                ("console.internal", 200),
                ("evilexample.com", 400),
                ("127.0.0.1", 400),  # given a list, only the list
            ):
                assert await status(http, "/api/groups", host) == expected, host
    finally:
        await srv.stop()


async def test_behind_a_tls_proxy_actions_from_the_public_origin_are_accepted(
    tmp_path: Path,
) -> None:
    srv = await console_with(tmp_path, public_origin="https://console.example.com")
    try:
        simple_group(srv, "old")
        async with aiohttp.ClientSession(base_url(srv)) as http:
            headers = {"Host": "console.example.com", "Origin": "https://console.example.com"}
            async with http.post(
                "/api/actions/reset-offsets",
                json={"group": "old", "topic": "orders"},
                headers=headers,
            ) as resp:
                assert resp.status == 200, await resp.text()
            # The plain-HTTP origin of the same host is another site.
            headers["Origin"] = "http://console.example.com"
            async with http.post(
                "/api/actions/delete-group", json={"group": "old"}, headers=headers
            ) as resp:
                assert resp.status == 403
    finally:
        await srv.stop()


async def test_forwarded_proto_is_believed_from_a_trusted_proxy_only(tmp_path: Path) -> None:
    for trusted, expected in ((("127.0.0.1",), 200), ((), 403)):
        srv = await console_with(tmp_path, trusted_proxies=trusted)
        try:
            simple_group(srv, "old")
            port = srv.console.port  # type: ignore[union-attr]
            async with aiohttp.ClientSession(base_url(srv)) as http:
                headers = {
                    "Origin": f"https://127.0.0.1:{port}",
                    "X-Forwarded-Proto": "https",
                    "X-Forwarded-For": "203.0.113.9",
                }
                async with http.post(
                    "/api/actions/reset-offsets",
                    json={"group": "old", "topic": "orders"},
                    headers=headers,
                ) as resp:
                    assert resp.status == expected, (trusted, await resp.text())
        finally:
            await srv.stop()


async def test_a_login_posted_from_another_site_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        async with aiohttp.ClientSession(
            base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)
        ) as http:
            async with http.post(
                "/login",
                data={"username": "alice", "password": "alice-secret"},
                headers={"Origin": "http://evil.example"},
                allow_redirects=False,
            ) as resp:
                assert resp.status == 403
                assert "Set-Cookie" not in resp.headers
            async with http.post(
                "/login",
                data={"username": "alice", "password": "alice-secret"},
                headers={"Origin": base_url(srv)},
                allow_redirects=False,
            ) as resp:
                assert resp.status == 303 and "Set-Cookie" in resp.headers
                assert "Secure" not in resp.headers["Set-Cookie"]  # plain HTTP
    finally:
        await srv.stop()


async def test_the_session_cookie_is_secure_when_the_browser_is_on_https(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch, trusted_proxies=("127.0.0.1",))
    try:
        async with (
            aiohttp.ClientSession(base_url(srv)) as http,
            http.post(
                "/login",
                data={"username": "alice", "password": "alice-secret"},
                headers={"X-Forwarded-Proto": "https"},
                allow_redirects=False,
            ) as resp,
        ):
            assert resp.status == 303
            assert "Secure" in resp.headers["Set-Cookie"]
    finally:
        await srv.stop()


async def test_the_standard_forwarded_header_works_as_x_forwarded(tmp_path: Path) -> None:
    srv = await console_with(tmp_path, trusted_proxies=("127.0.0.1",))
    try:
        simple_group(srv, "old")
        port = srv.console.port  # type: ignore[union-attr]
        async with (
            aiohttp.ClientSession(base_url(srv)) as http,
            http.post(
                "/api/actions/reset-offsets",
                json={"group": "old", "topic": "orders"},
                headers={
                    "Origin": f"https://127.0.0.1:{port}",
                    # RFC 7239: the proxy appends the hop it saw; the last one is believed.
                    "Forwarded": "for=198.51.100.1;proto=http, "
                    'for="[2001:db8::7]:4711";proto=https',
                },
            ) as resp,
        ):
            assert resp.status == 200, await resp.text()
        assert srv.console is not None
        request = make_mocked_request(
            "GET",
            "/",
            headers={"Forwarded": 'for="[2001:db8::7]:4711";proto=https'},
            transport=FakeTransport("127.0.0.1"),
        )
        assert srv.console.addressing.client_address(request) == "2001:db8::7"
    finally:
        await srv.stop()


class FakeTransport:
    def __init__(self, peer: str) -> None:
        self.peer = peer

    def get_extra_info(self, name: str, default: object = None) -> object:
        return (self.peer, 40000) if name == "peername" else default

    def is_closing(self) -> bool:
        return False


def test_listening_on_every_address_any_ip_address_is_a_host_but_no_other_name() -> None:
    addressing = Addressing(ConsoleSettings(listen=("0.0.0.0", 8080)))

    def allowed(host: str) -> bool:
        return addressing.host_allowed(make_mocked_request("GET", "/", headers={"Host": host}))

    assert allowed("10.1.2.3:8080") and allowed("[fe80::1]:8080") and allowed("localhost")
    assert not allowed("rebind.example:8080")
