"""The runtime's periodic jobs (offset expiry, heartbeat checkpoints, security refresh)."""

from __future__ import annotations

import asyncio

from coordinator.security.config import SecuritySettings
from coordinator.settings.config import Settings
from coordinator.shell.runtime import Runtime
from coordinator.store import MemoryStore


async def test_periodic_jobs_keep_one_timer_each_however_often_they_run() -> None:
    # A re-armed job used to keep every fired timer handle: memory grew for as long as
    # the daemon ran (about 34 MB a day idle, faster with short intervals).
    loop = asyncio.get_running_loop()
    settings = Settings(
        offsets_retention_check_interval_ms=1,
        heartbeat_checkpoint_interval_ms=1,
        security=SecuritySettings(refresh_interval_ms=1),
    )
    runtime = Runtime(settings, loop, MemoryStore())
    await runtime.load()
    await asyncio.sleep(0.3)  # each 1 ms job runs dozens of times
    held = len(runtime._periodic)
    runtime.shutdown()
    assert held <= 3, f"{held} timer handles held after the jobs ran repeatedly"
