"""An in-process daemon on 127.0.0.1 with a 12-partition topic and no initial delay."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
import structlog

from coordinator.group.config import GroupConfig
from coordinator.settings.config import Settings
from coordinator.shell.server import Server


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    # Thousands of members make the daemon's INFO log the bottleneck.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            topics=(("t", 12),),
            group=GroupConfig(initial_rebalance_delay_ms=0),
        )
    )
    await srv.start()
    yield srv
    await srv.stop()
    structlog.reset_defaults()


@pytest.fixture
def bootstrap(server: Server) -> str:
    return f"127.0.0.1:{server.port}"
