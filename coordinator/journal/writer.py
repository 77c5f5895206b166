"""``JournalWriter``: hands events to a background thread that writes and rotates the files.

The event loop only wraps the event in a ``LogRecord``, stamped with the daemon's clock, and
puts it on a queue; the stdlib ``QueueListener`` thread turns it into JSON and writes it through
a rotating file handler, so the loop never waits for the disk.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import time
from logging.handlers import QueueListener, TimedRotatingFileHandler
from pathlib import Path
from typing import cast

from ..shared.clock import Clock
from ..shared.events import NodeEvent
from ..shared.private_files import private_dir, private_file
from .schema import JOURNALED, to_entry


class SizeAndTimeRotatingFileHandler(TimedRotatingFileHandler):
    """Rotates every ``interval_s`` seconds and whenever the file reaches ``max_bytes``.

    Rotated files get the UTC time their interval started, plus ``.1``, ``.2``... when
    several rotate within one interval (the stdlib would overwrite them). Time is the
    entries' own time (the daemon's clock), not the thread's reading of the wall clock.
    """

    def __init__(self, filename: Path, max_bytes: int, interval_s: int, now_s: float) -> None:
        super().__init__(filename, when="S", interval=interval_s, encoding="utf-8", utc=True)
        self.max_bytes = max_bytes
        self.namer = _unused_name
        self.rolloverAt = self.computeRollover(int(now_s))
        self._entry_time = now_s

    def _open(self):  # type: ignore[no-untyped-def]
        stream = super()._open()
        private_file(self.baseFilename)  # the first file and every one rotated in
        return stream

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        self._entry_time = record.created
        if record.created >= self.rolloverAt:
            return True
        return (
            self.stream is not None and self.max_bytes > 0 and self.stream.tell() >= self.max_bytes
        )

    def doRollover(self) -> None:
        super().doRollover()
        self.rolloverAt = self.computeRollover(int(self._entry_time))


def _unused_name(name: str) -> str:
    candidate, n = name, 0
    while os.path.exists(candidate):
        n += 1
        candidate = f"{name}.{n}"
    return candidate


class _EntryFormatter(logging.Formatter):
    def __init__(self, node_id: int) -> None:
        super().__init__()
        self.node_id = node_id
        # Numbered here, on the one writer thread, in the order the events were queued.
        self._seq = itertools.count()

    def format(self, record: logging.LogRecord) -> str:
        # The writer queues only journaled events (``__call__``).
        event = cast(NodeEvent, record.msg)
        entry = to_entry(event, record.created, self.node_id, next(self._seq))
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


class JournalWriter:
    """An event sink (``writer(event)``); ``close()`` flushes what is queued."""

    def __init__(
        self,
        directory: Path,
        node_id: int,
        max_bytes: int = 64 << 20,
        interval_s: int = 3600,
        clock: Clock | None = None,
    ) -> None:
        private_dir(directory)
        self.path = directory / f"journal-node{node_id}.jsonl"
        self._clock = clock if clock is not None else _WallClock()
        handler = SizeAndTimeRotatingFileHandler(
            self.path, max_bytes, interval_s, self._clock.now_ms() / 1000
        )
        handler.setFormatter(_EntryFormatter(node_id))
        self._handler = handler
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = QueueListener(self._queue, handler)
        self._listener.start()
        self._closed = False

    def __call__(self, event: NodeEvent) -> None:
        if self._closed or type(event) not in JOURNALED:
            return
        record = logging.LogRecord("journal", logging.INFO, "", 0, event, None, None)
        record.created = self._clock.now_ms() / 1000
        self._queue.put(record)

    def close(self) -> None:
        """Write everything queued, then close the file."""
        if self._closed:
            return
        self._closed = True
        self._listener.stop()
        self._handler.close()


class _WallClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000
