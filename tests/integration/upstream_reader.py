"""An aiokafka group member in its own process, so a test can SIGKILL it mid-stream:

    python -m tests.integration.upstream_reader BOOTSTRAP GROUP TOPIC COMMIT_EVERY

Reads from the earliest offset, commits every COMMIT_EVERY records (synchronously) and
prints "committed N" after each commit; it never leaves its group.
"""

from __future__ import annotations

import asyncio
import sys
import time


async def main() -> None:
    from aiokafka import AIOKafkaConsumer

    bootstrap, group, topic, every = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_records=every,
    )
    await consumer.start()
    read = 0
    deadline = time.monotonic() + 120  # never outlives its test by much
    while time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500, max_records=every)
        read += sum(len(records) for records in batches.values())
        if batches:
            await consumer.commit()
            print(f"committed {read}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
