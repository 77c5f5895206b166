"""The console's actions: refused without --http-admin, done as the Kafka APIs do them with
it, and, with ACLs enabled, only after a login and within that user's ACLs."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coordinator.security.config import Listener, SecurityProtocol, SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.shared.accounts import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.shell.server import Server
from coordinator.store import MemoryStore, Write
from tests.coordinator.console.helpers import (
    base_url,
    get_json,
    member,
    settings,
    simple_group,
    started,
)


async def post(
    http: aiohttp.ClientSession, action: str, body: object, status: int, **kwargs: object
) -> dict[str, object]:
    async with http.post(f"/api/actions/{action}", json=body, **kwargs) as resp:  # type: ignore[arg-type]
        answer = await resp.json()
        assert resp.status == status, answer
        return answer  # type: ignore[no-any-return]


@pytest.fixture
async def admin_server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await started(settings(tmp_path, admin=True))
    yield srv
    await srv.stop()


async def test_actions_are_refused_without_http_admin(tmp_path: Path) -> None:
    srv = await started(settings(tmp_path, admin=False))
    try:
        simple_group(srv, "keep-me")
        async with aiohttp.ClientSession(base_url(srv)) as http:
            answer = await post(http, "delete-group", {"group": "keep-me"}, 403)
            assert "--http-admin" in str(answer["error"])
            await post(http, "reset-offsets", {"group": "keep-me", "topic": "orders"}, 403)
            await get_json(http, "/api/groups/keep-me")  # still there
    finally:
        await srv.stop()


@pytest.mark.integration  # group members heartbeating on real timers
async def test_remove_a_static_member_reset_offsets_and_delete_the_group(
    admin_server: Server,
) -> None:
    srv = admin_server
    dynamic = member(srv, "app")
    static = member(srv, "app", instance="host-1")
    static.session_timeout_ms = 60_000  # it would stay a minute after dying
    await dynamic.start(10)
    await static.start(10)
    await dynamic.wait_stable(10)
    await dynamic.commit({("orders", 2): 9})
    async with aiohttp.ClientSession(base_url(srv)) as http:
        await post(http, "delete-group", {"group": "app"}, 409)  # it has members
        await post(http, "reset-offsets", {"group": "app", "topic": "orders"}, 409)  # not Empty

        await static.close(leave=False)  # a static member dies without a word
        await post(http, "remove-member", {"group": "app", "instance_id": "host-1"}, 200)
        await dynamic.wait_stable(10)
        group = await get_json(http, "/api/groups/app")
        assert [m["member_id"] for m in group["members"]] == [dynamic.member_id]
        assert group["rebalances"][0]["trigger"] == "member_left"
        await post(http, "remove-member", {"group": "app", "instance_id": "host-1"}, 404)

        await dynamic.close()
        assert (await get_json(http, "/api/groups/app"))["state"] == "Empty"
        done = await post(http, "reset-offsets", {"group": "app", "topic": "orders"}, 200)
        assert done["offsets"] == {str(p): 0 for p in range(6)}
        offsets = (await get_json(http, "/api/groups/app"))["offsets"]
        assert [(o["partition"], o["offset"]) for o in offsets] == [(p, 0) for p in range(6)]
        await post(http, "reset-offsets", {"group": "app", "topic": "nope"}, 404)

        await post(http, "delete-group", {"group": "app"}, 200)
        await get_json(http, "/api/groups/app", status=404)
        await post(http, "delete-group", {"group": "app"}, 404)


async def test_actions_must_be_same_origin_json(admin_server: Server) -> None:
    simple_group(admin_server, "guarded")
    async with aiohttp.ClientSession(base_url(admin_server)) as http:
        async with http.post("/api/actions/delete-group", data={"group": "guarded"}) as resp:
            assert resp.status == 415  # what a cross-site form would send
        await post(
            http,
            "delete-group",
            {"group": "guarded"},
            403,
            headers={"Origin": "http://elsewhere.example"},
        )
        await get_json(http, "/api/groups/guarded")


def allow(principal: str, kind: ResourceType, name: str, op: Operation) -> AclBinding:
    prefixed = name.endswith("-")
    pattern = PatternType.PREFIXED if prefixed else PatternType.LITERAL
    return AclBinding(principal, kind, name, pattern, op, Permission.ALLOW)


async def acl_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sasl: bool = False,
    failed_login_delay_ms: int = 100,
    **console_options: Any,
) -> Server:
    store = MemoryStore()
    store.write(
        Write(
            credentials=[
                make_credential(user, f"{user}-secret", "SCRAM-SHA-256")
                for user in ("alice", "root")
            ],
            acls=[
                allow("User:alice", ResourceType.GROUP, "alice-", Operation.READ),
                allow("User:alice", ResourceType.TOPIC, "orders", Operation.READ),
            ],
        )
    )
    monkeypatch.setattr("coordinator.shell.server.open_store", lambda _settings: store)
    security = SecuritySettings(
        acls_enabled=True,
        super_users=frozenset({"User:root"}),
        sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256"),
        failed_authentication_delay_ms=failed_login_delay_ms,
    )
    s = settings(tmp_path, admin=True, security=security)
    console = dataclasses.replace(s.console, **console_options)
    if sasl:  # a SASL_PLAINTEXT Kafka listener besides the plain one
        plain, with_sasl = SecurityProtocol.PLAINTEXT, SecurityProtocol.SASL_PLAINTEXT
        s = dataclasses.replace(
            s,
            listeners=(Listener(plain, "127.0.0.1", 0), Listener(with_sasl, "127.0.0.1", 0)),
        )
    return await started(dataclasses.replace(s, console=console))


async def test_with_acls_the_console_asks_for_a_login_and_applies_the_acls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        for group in ("alice-app", "bob-app"):
            simple_group(srv, group)
        # unsafe: the jar keeps cookies of an IP address (127.0.0.1), as browsers do.
        async with aiohttp.ClientSession(
            base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)
        ) as http:
            answer = await get_json(http, "/api/groups", status=401)
            assert "log in" in answer["error"]
            async with http.get("/groups", allow_redirects=False) as resp:
                assert resp.status == 303 and resp.headers["Location"].startswith("/login")
            async with http.post(
                "/login", data={"username": "alice", "password": "wrong"}, allow_redirects=False
            ) as resp:
                assert "error=" in resp.headers["Location"]
            await get_json(http, "/api/groups", status=401)

            async with http.post(
                "/login",
                data={"username": "alice", "password": "alice-secret", "next": "/groups"},
            ) as resp:
                assert resp.status == 200 and resp.url.path == "/groups"
                assert "User:alice" in await resp.text()
            # What alice may describe: her groups, and the topic she may read.
            listed = await get_json(http, "/api/groups")
            assert [g["id"] for g in listed["groups"]] == ["alice-app"]
            await get_json(http, "/api/groups/bob-app", status=404)
            assert (await get_json(http, "/api/overview"))["groups"] == 1
            topics = [t["name"] for t in (await get_json(http, "/api/topics"))["topics"]]
            assert topics == ["orders"]
            offsets = (await get_json(http, "/api/groups/alice-app"))["offsets"]
            assert [o["topic"] for o in offsets] == ["orders"]
            # READ is not DELETE: DeleteGroups would refuse her too.
            refused = await post(http, "delete-group", {"group": "alice-app"}, 403)
            assert "User:alice may not DELETE group" in str(refused["error"])
            await post(http, "reset-offsets", {"group": "alice-app", "topic": "orders"}, 200)
            await post(http, "reset-offsets", {"group": "bob-app", "topic": "orders"}, 403)

        async with aiohttp.ClientSession(
            base_url(srv), cookie_jar=aiohttp.CookieJar(unsafe=True)
        ) as root:
            async with root.post(
                "/login", data={"username": "root", "password": "root-secret"}
            ) as resp:
                assert resp.status == 200
            listed = await get_json(root, "/api/groups")
            assert [g["id"] for g in listed["groups"]] == ["alice-app", "bob-app"]
            await post(root, "delete-group", {"group": "bob-app"}, 200)
            async with root.post("/logout") as resp:
                assert resp.url.path == "/login"
            await get_json(root, "/api/groups", status=401)
    finally:
        await srv.stop()


async def test_guessing_passwords_is_limited_as_on_the_kafka_listeners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = await acl_server(tmp_path, monkeypatch)
    try:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(base_url(srv), cookie_jar=jar) as http:
            for guess in range(5):  # --max-failed-authentications (5 by default)
                async with http.post(
                    "/login", data={"username": "alice", "password": f"guess-{guess}"}
                ) as resp:
                    assert "wrong user name or password" in await resp.text()
            # Past the limit even the right password is refused, unchecked, for the window.
            async with http.post(
                "/login", data={"username": "alice", "password": "alice-secret"}
            ) as resp:
                assert resp.url.path == "/login"
            await get_json(http, "/api/groups", status=401)
    finally:
        await srv.stop()
