"""What a new user meets first: a daemon that says when consumers will get no partitions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from coordinator.config import Settings
from coordinator.errors import StartupError
from coordinator.runtime import Runtime
from coordinator.server import Server
from coordinator.store import SqliteStore
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic

from .pipeline import Answer, Pipeline


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
    with pytest.raises(StartupError, match="partitions cannot be removed"):
        await start((("orders", 3),))
    again = await start(())  # the grown count was stored
    topic = again.catalog.get("orders")
    assert topic is not None and topic.partitions == 4
    await again.close_store()
