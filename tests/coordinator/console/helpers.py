"""A daemon with its console on 127.0.0.1, and groups made the way clients make them."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from coordinator.client.member import GroupMember
from coordinator.console.settings import ConsoleSettings
from coordinator.group.config import GroupConfig
from coordinator.group.requests import OffsetCommitInput, PartitionCommit, TopicCommit
from coordinator.handlers.outcome import Pending
from coordinator.security.config import SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shell.server import Server


def settings(
    tmp_path: Path, admin: bool = False, security: SecuritySettings | None = None
) -> Settings:
    return Settings(
        listen=("127.0.0.1", 0),
        store="memory",
        data_dir=tmp_path,
        topics=(("orders", 6), ("payments", 3)),
        group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500),
        console=ConsoleSettings(listen=("127.0.0.1", 0), admin=admin),
        security=security or SecuritySettings(),
    )


async def started(s: Settings) -> Server:
    srv = Server(s)
    await srv.start()
    return srv


#: Long enough that a loaded machine (the suite runs on every core) never expires a member
#: whose heartbeats are merely late; the tests that want an expiry set their own.
SESSION_MS = 6000


def member(srv: Server, group: str, instance: str | None = None) -> GroupMember:
    return GroupMember(
        f"127.0.0.1:{srv.port}",
        group,
        topics=["orders"],
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=100,
        group_instance_id=instance,
    )


def simple_group(srv: Server, group: str, offset: int = 1) -> None:
    """A group holding one committed offset, made by the state machine as an admin's
    OffsetCommit (generation -1) makes it."""
    assert srv.runtime is not None
    commit = OffsetCommitInput(
        group, -1, "", None, -1, [TopicCommit("orders", [PartitionCommit(0, offset)])], 9
    )
    runtime = srv.runtime
    runtime.apply(runtime.groups.commit_offsets(Pending(), commit, runtime.now_ms()))


def base_url(srv: Server) -> str:
    assert srv.console is not None and srv.console.port is not None
    return f"http://127.0.0.1:{srv.console.port}"


async def get_json(http: aiohttp.ClientSession, path: str, status: int = 200) -> Any:
    async with http.get(path) as resp:
        assert resp.status == status, await resp.text()
        return await resp.json()


async def events(resp: aiohttp.ClientResponse) -> AsyncIterator[Any]:
    """The JSON payloads of a server-sent event stream, one per event."""
    data: list[str] = []
    async for raw in resp.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []


def browser_events(stream: str) -> list[tuple[str, str]]:
    """(event name, data) of each event, read as the HTML standard's EventSource reads a
    stream: a line ends at CRLF, CR or LF; a blank line dispatches."""
    found: list[tuple[str, str]] = []
    name, data = "message", []
    for line in re.split(r"\r\n|\r|\n", stream):
        if not line:
            if data:
                found.append((name, "\n".join(data)))
            name, data = "message", []
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return found
