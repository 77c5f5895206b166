"""PostgreSQL going away under a serving node: one line when it goes, one when it is back;
no library tracebacks and no line per retry (the jobs retry every second)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.postgres_server import postgres_server

from .conftest import Daemon, wait_until

pytestmark = pytest.mark.integration

DOWN_S = 4.0  # four retries of each job at the default one-second renewal interval


def test_a_database_outage_is_one_line_when_it_begins_and_one_when_it_ends(
    start_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    with postgres_server() as own:  # this test stops it: not the shared one
        url = own.create_database("outage")
        node = start_daemon("--database-url", url, "--topic", "t:3")  # postgres, implied
        assert "store=postgres" in node.log()
        before = len(node.log())
        own.process.send_signal(signal.SIGINT)  # a fast shutdown: clients are cut off
        own.process.wait(timeout=30)
        time.sleep(DOWN_S)
        own.restart()
        assert wait_until(lambda: "lease renewal works again" in node.log(), 20)
        time.sleep(1.5)  # the users-and-ACLs reader runs a second apart
        outage = node.log()[before:]
        node.stop()  # before the server: a smart shutdown waits for its clients
    assert "Traceback" not in outage, outage
    lines = outage.strip().splitlines()
    failed = [line for line in lines if " failed " in line]
    assert len(failed) <= 3, outage  # each job once (lease, users and ACLs, a store write)
    assert any("lease renewal failed" in line for line in failed), outage
    assert len(lines) <= 8, outage  # 4+ s of retries by 2 jobs were 10+ lines and tracebacks
