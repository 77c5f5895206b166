"""Hostile SubscribedTopicRegex patterns (issue 32): the work one client's patterns cause
is bounded in memory, and other members are answered while its patterns compile."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from coordinator.client.connection import connect
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.settings.config import Settings
from coordinator.shared.topic_regex import CompiledCache, cost
from coordinator.shell.server import Server
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.errors import ErrorCode
from tests.coordinator.group.consumer.harness import ConsumerHarness

#: A pattern that takes RE2 seconds to compile (counted repetitions), holding the
#: interpreter lock all along: inline, it would stop the event loop.
#: RE2 takes long to compile these (here: 0.4 s at 120 repeats, 1.6 s at 240, 6.7 s at 480):
#: SLOW well within the default 5 s limit, TOO_SLOW far past a 2 s one on any machine.
SLOW = "[a-z]{1,100}" * 240
TOO_SLOW = "[a-z]{1,100}" * 480


def _join(
    member: str, group: str, pattern: str | None, names: list[str] | None = None
) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=names if names is not None else [],
        subscribed_topic_regex=pattern,
        topic_partitions=[],
    )


def _rss(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


async def _server(tmp_path: Path, **consumer: int) -> Server:
    settings = Settings(listen=("127.0.0.1", 0), data_dir=tmp_path, topics=(("orders", 3),))
    group = replace(settings.group, consumer=ConsumerGroupConfig(**consumer))
    srv = Server(replace(settings, group=group))
    await srv.start()
    return srv


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = await _server(tmp_path, regex_cache_bytes=4 << 20, regex_resolve_timeout_ms=20000)
    yield srv
    await srv.stop()


def test_a_pattern_longer_than_the_limit_is_refused_without_being_compiled() -> None:
    h = ConsumerHarness()
    a = h.member("a", topics=[])
    a.regex = "o" * (ConsumerGroupConfig().regex_max_bytes + 1)
    r = a.join()
    assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert r.error_message is not None and "it is longer than 65536 bytes" in r.error_message
    assert len(r.error_message) < 400  # the pattern is not echoed whole
    assert not h.co.groups


def test_a_group_drops_a_pattern_once_no_member_uses_it() -> None:
    h = ConsumerHarness(topics={"orders-eu": 2, "payments": 1})
    a, b = h.member("a", topics=[]), h.member("b", topics=[])
    a.regex, b.regex = "orders-.*", "orders-.*"
    a.join()
    b.join()
    g = h.co.consumer_group("group")
    a.regex = "pay.*"
    a.beat(full=True)
    assert set(g.resolved) == {"orders-.*", "pay.*"}  # b still uses orders-.*
    b.leave()
    assert set(g.resolved) == {"pay.*"}
    a.regex = "p.*"
    a.beat(full=True)
    assert set(g.resolved) == {"p.*"}


def test_the_compiled_pattern_cache_keeps_to_its_byte_budget() -> None:
    cache = CompiledCache(1 << 20)
    for i in range(200):
        cache.get(f"t{i}-(" + "|".join(f"x{j}" for j in range(2000)) + ")")
        assert cache.used <= cache.budget
    assert 0 < len(cache) <= (1 << 20) // cost("t0-(" + "|".join(f"x{j}" for j in range(2000)))


@pytest.mark.integration  # starts the regex worker process
async def test_memory_stays_bounded_under_many_distinct_huge_patterns(server: Server) -> None:
    """One member sending a new ~60 KB pattern in every heartbeat (and 1.6 MB ones, over
    the limit): the daemon keeps only the pattern in use, the worker within its budget."""
    c = await connect("127.0.0.1", server.port)
    r = await c.request(_join("m", "g", "x"), 1, ConsumerGroupHeartbeatResponse)
    assert r.error_code == 0
    before = _rss()
    for i in range(40):
        alternatives = "|".join(f"t{i}-{j:05d}" for j in range(6000))  # ~60 KB
        req = replace(_join("m", "g", alternatives), member_epoch=r.member_epoch)
        r = await c.request(req, 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == 0, r.error_message
        if i % 10 == 0:
            huge = replace(req, subscribed_topic_regex="(a|b)" * 320_000)  # 1.6 MB
            refused = await c.request(huge, 1, ConsumerGroupHeartbeatResponse)
            assert refused.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    grown = _rss() - before
    g = server.runtime.node.groups.consumer_group("g")
    assert list(g.resolved) == [alternatives]
    assert grown < 40 << 20, f"the daemon grew by {grown >> 20} MB"
    worker = server.runtime.node.regex_resolver.pid
    assert worker is not None and _rss(worker) < 80 << 20
    c.close()


@pytest.mark.integration  # starts the regex worker process
async def test_an_unrelated_member_is_answered_while_a_pattern_compiles(server: Server) -> None:
    attacker = await connect("127.0.0.1", server.port)
    other = await connect("127.0.0.1", server.port)
    r = await other.request(
        _join("o", "quiet", None, ["orders"]), 1, ConsumerGroupHeartbeatResponse
    )
    assert r.error_code == 0
    slow = asyncio.ensure_future(
        attacker.request(_join("a", "loud", SLOW), 1, ConsumerGroupHeartbeatResponse)
    )
    await asyncio.sleep(0.3)  # the slow pattern is being compiled
    beats = 0
    beat = replace(_join("o", "quiet", None), member_epoch=r.member_epoch, rebalance_timeout_ms=-1)
    beat = replace(beat, subscribed_topic_names=None, topic_partitions=None)
    while not slow.done() and beats < 20:
        started = time.perf_counter()
        answer = await other.request(beat, 1, ConsumerGroupHeartbeatResponse)
        assert answer.error_code == 0
        beats += 1
        assert time.perf_counter() - started < 1.0
    assert beats >= 1 and not slow.done(), "the other member waited for the slow pattern"
    done = await slow
    # It compiled in the end: valid, and subscribed.
    assert done.error_code == 0, done.error_message
    attacker.close()
    other.close()


@pytest.mark.integration  # starts the regex worker process
async def test_a_pattern_that_takes_too_long_is_refused(tmp_path: Path) -> None:
    srv = await _server(tmp_path, regex_resolve_timeout_ms=2000)
    try:
        c = await connect("127.0.0.1", srv.port)
        r = await c.request(_join("a", "g", TOO_SLOW), 1, ConsumerGroupHeartbeatResponse)
        assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert r.error_message is not None
        assert "could not be compiled and matched within 2000 ms" in r.error_message
        ok = await c.request(_join("a", "g", "ord.*"), 1, ConsumerGroupHeartbeatResponse)
        assert ok.error_code == 0 and ok.assignment is not None  # a new worker took over
        c.close()
    finally:
        await srv.stop()


@pytest.mark.integration  # starts the regex worker process
async def test_members_joining_with_one_pattern_at_once_all_get_in(tmp_path: Path) -> None:
    """One resolution serves them all: none is told to retry, even with one place."""
    srv = await _server(tmp_path, regex_max_pending=1)
    try:
        conns = [await connect("127.0.0.1", srv.port) for _ in range(8)]
        joins = [
            c.request(_join(f"m-{i}", "burst", "ord.*"), 1, ConsumerGroupHeartbeatResponse)
            for i, c in enumerate(conns)
        ]
        answers = await asyncio.gather(*joins)
        assert [a.error_code for a in answers] == [0] * 8, [a.error_message for a in answers]
        g = srv.runtime.node.groups.consumer_group("burst")
        assert g.subscribed_topics() == {"orders"}
        for c in conns:
            c.close()
    finally:
        await srv.stop()
