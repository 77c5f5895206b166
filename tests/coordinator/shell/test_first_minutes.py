"""What a new user meets first: a daemon that says when consumers will get no partitions."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from coordinator.settings.config import Settings
from coordinator.shared.errors import StartupError
from coordinator.shell.runtime import Runtime
from coordinator.shell.server import Server
from coordinator.store import SqliteStore
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
from tests.coordinator.shell.pipeline import Answer, Pipeline

ROOT = Path(__file__).resolve().parents[3]


def ask_metadata(p: Pipeline, *names: str) -> None:
    request = MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names])
    assert isinstance(p.send(p.connect(), request, 9), Answer)


def test_an_unknown_topic_is_warned_about_once_per_name():
    p = Pipeline(Settings())
    p.node.catalog.create("orders", 3)
    with capture_logs() as logs:
        ask_metadata(p, "payments", "orders")
        ask_metadata(p, "payments")
        ask_metadata(p, "refunds")
    warned = [e["topic"] for e in logs if e["event"] == "unknown topic"]
    assert warned == ["payments", "refunds"]
    assert all("--topic" in e["hint"] for e in logs if e["event"] == "unknown topic")


def test_auto_created_topics_are_not_warned_about():
    p = Pipeline(Settings(auto_create_topics=True))
    with capture_logs() as logs:
        ask_metadata(p, "payments")
    assert not [e for e in logs if e["event"] == "unknown topic"]


async def test_a_daemon_serving_no_topics_says_so_at_start():
    for topics, warned in (((), True), ((("demo", 6),), False)):
        srv = Server(Settings(listen=("127.0.0.1", 0), store="memory", topics=topics))
        with capture_logs() as logs:
            await srv.start()
            await srv.stop()
        assert any(e["event"] == "serving no topics" for e in logs) is warned


async def test_a_topic_given_more_partitions_grows_and_fewer_is_refused(tmp_path: Path):
    loop = asyncio.get_running_loop()

    async def start(topics: tuple[tuple[str, int], ...]) -> Runtime:
        runtime = Runtime(Settings(topics=topics), loop, SqliteStore(tmp_path))
        await runtime.load()
        return runtime

    first = await start((("orders", 2),))
    await first.close_store()
    grown = await start((("orders", 4),))
    topic = grown.catalog.get("orders")
    assert topic is not None and topic.partitions == 4
    await grown.close_store()
    refused = Runtime(Settings(topics=(("orders", 3),)), loop, SqliteStore(tmp_path))
    with pytest.raises(StartupError, match="partitions cannot be removed"):
        await refused.load()
    await refused.close_store()
    again = await start(())  # the grown count was stored
    topic = again.catalog.get("orders")
    assert topic is not None and topic.partitions == 4
    await again.close_store()


def serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator.commands.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.integration  # starts a process
def test_ordinary_mistakes_get_one_line_and_no_traceback(tmp_path: Path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    garbage = tmp_path / "cert.pem"
    garbage.write_text("not a certificate\n")
    data = ("--data-dir", str(tmp_path / "data"))
    tls = ("--listener", "SSL://127.0.0.1:0", "--ssl-certfile", str(garbage))
    tls += ("--ssl-keyfile", str(garbage))
    try:
        cases = {
            "cannot listen on 127.0.0.1": serve(
                "--listen", f"127.0.0.1:{port}", *data, cwd=tmp_path
            ),
            "cannot load TLS": serve(*tls, *data, cwd=tmp_path),
        }
    finally:
        taken.close()
    for said, run in cases.items():
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr, run.stderr
        assert said in run.stderr.strip().splitlines()[-1], run.stderr  # its last word
