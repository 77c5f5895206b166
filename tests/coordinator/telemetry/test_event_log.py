"""Group events in the daemon's log: their fields as they are, assignments left out, and
nothing rendered below the configured level."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from coordinator.group.events import (
    GroupConfigCapped,
    LimitReached,
    MemberJoined,
    OffsetsCommitted,
    SyncCompleted,
)
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.store import MemoryStore


@pytest.fixture
def warnings_only() -> Iterator[None]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    yield
    structlog.reset_defaults()


async def runtime() -> Runtime:
    return Runtime(Settings(), asyncio.get_running_loop(), MemoryStore())


async def test_events_are_logged_with_their_fields_but_no_assignments() -> None:
    rt = await runtime()
    synced = SyncCompleted("g", 3, 12, 40, "consumer", (("m-1", b"\x00\x01"), ("m-2", b"")))
    joined = MemberJoined("g", "m-1", None, "client", "/10.0.0.1", ["range", "roundrobin"])
    with capture_logs() as logs:
        rt.emit(synced)
        rt.emit(joined)
    assert logs == [
        {
            "event": "SyncCompleted",
            "log_level": "info",
            "group_id": "g",
            "generation_id": 3,
            "duration_ms": 12,
            "rebalance_duration_ms": 40,
            "protocol_type": "consumer",
        },
        {
            "event": "MemberJoined",
            "log_level": "info",
            "group_id": "g",
            "member_id": "m-1",
            "group_instance_id": None,
            "client_id": "client",
            "client_host": "/10.0.0.1",
            "protocols": ["range", "roundrobin"],
        },
    ]


async def test_below_the_level_only_warnings_are_logged(warnings_only: None) -> None:
    rt = await runtime()
    with capture_logs() as logs:
        rt.emit(MemberJoined("g", "m-1", None, "client", "/10.0.0.1", ["range"]))
        rt.emit(LimitReached("g", "group_max_size", 5, "GROUP_MAX_SIZE_REACHED"))
    assert [(e["event"], e["log_level"]) for e in logs] == [("LimitReached", "warning")]


async def test_a_group_config_applied_capped_is_a_warning_with_its_values(
    warnings_only: None,
) -> None:
    """KAFKA-20162: the operator sees which group, which config, stored and applied."""
    rt = await runtime()
    with capture_logs() as logs:
        rt.emit(GroupConfigCapped("g", "consumer.session.timeout.ms", 60000, 50000, 6000, 50000))
    assert logs == [
        {
            "event": "GroupConfigCapped",
            "log_level": "warning",
            "group_id": "g",
            "config": "consumer.session.timeout.ms",
            "stored": 60000,
            "applied": 50000,
            "minimum": 6000,
            "maximum": 50000,
        }
    ]


@pytest.fixture
def info_level() -> Iterator[None]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    yield
    structlog.reset_defaults()


async def test_commits_are_logged_at_debug_not_at_the_default_info(info_level: None) -> None:
    rt = await runtime()
    with capture_logs() as logs:
        rt.emit(OffsetsCommitted("g", 3))  # every consumer, every few seconds
        rt.emit(MemberJoined("g", "m-1", None, "client", "/10.0.0.1", ["range"]))
    assert [e["event"] for e in logs] == ["MemberJoined"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    with capture_logs() as logs:
        rt.emit(OffsetsCommitted("g", 3))
    assert logs == [
        {"event": "OffsetsCommitted", "log_level": "debug", "group_id": "g", "count": 3}
    ]
