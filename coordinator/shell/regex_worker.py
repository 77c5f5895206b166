"""The regex worker: a child process that compiles clients' SubscribedTopicRegex patterns
and matches them against the topics, so that no pattern stalls the event loop.

Compiling an RE2 pattern holds the interpreter lock (a few kilobytes of counted
repetitions take seconds), so a thread would not do; Kafka resolves regexes off the
request path too, in its executor. The daemon starts the worker on the first pattern to
resolve, talks to it through a pipe (one resolution at a time), and kills and restarts it
when a resolution takes longer than ``group.consumer.regex.resolve.timeout.ms``: the
patterns of that call are then refused as not valid. The worker keeps compiled patterns
within ``group.consumer.regex.cache.bytes`` (``topic_regex.CompiledCache``).

``RegexResolver.resolve`` blocks: the heartbeat handler calls it from an ``Offloaded``
outcome's work, run on the resolver's own thread (``executor``: password checks never wait
behind a pattern), after ``reserve()`` on the event loop (at most
``group.consumer.regex.max.pending`` resolutions wait at once; the others are told to
retry). What a pattern matched among a given number of topics is remembered (within the
same byte budget, counting the pattern and the names), so the members of a group joining
with the same pattern at once cost one resolution, and the next ones none.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from ..shared.topic_regex import CompiledCache, Resolution, resolve

#: The worker says it is ready with this, once; it must within this time.
READY = "ready"
STARTUP_TIMEOUT_S = 30.0
_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding `coordinator`


class RegexResolver:
    def __init__(self, cache_bytes: int, timeout_ms: int, max_pending: int) -> None:
        self.cache_bytes = cache_bytes
        self.timeout_ms = timeout_ms
        self.max_pending = max_pending
        self._pending = 0
        self._count_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._sent_topics = -1  # the topic count the worker holds the names of
        #: Resolutions that timed out (the worker was restarted each time).
        self.timeouts = 0
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="regex")
        # (pattern, topic count) -> what it matched, least recently used first out.
        self._results: OrderedDict[tuple[str, int], frozenset[str] | str] = OrderedDict()
        self._results_bytes = 0
        #: Groups whose regexes are being resolved again (new topics): one at a time.
        self.refreshing: set[str] = set()
        #: (pattern, topic count) being resolved: a heartbeat wanting only these waits
        #: for them without a place of its own (it finds them remembered).
        self.inflight: set[tuple[str, int]] = set()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def reserve(self) -> bool:
        """Take a place in the queue (False: full); ``resolve`` gives it back."""
        with self._count_lock:
            if self._pending >= self.max_pending:
                return False
            self._pending += 1
            return True

    def _release(self) -> None:
        with self._count_lock:
            self._pending -= 1

    def known(self, patterns: Iterable[str], topic_count: int) -> Resolution | None:
        """What the patterns matched among ``topic_count`` topics, if all are remembered."""
        found: dict[str, frozenset[str] | str] = {}
        with self._count_lock:
            for pattern in patterns:
                outcome = self._results.get((pattern, topic_count))
                if outcome is None:
                    return None
                self._results.move_to_end((pattern, topic_count))
                found[pattern] = outcome
        return found

    def resolve(
        self, patterns: Collection[str], topics: list[str], reserved: bool = True
    ) -> Resolution:
        """The topics each pattern matches, or why it is refused. Blocks; gives back the
        place taken with ``reserve`` (``reserved``)."""
        try:
            remembered = self.known(patterns, len(topics))
            if remembered is not None:  # resolved while this one waited
                return remembered
            with self._call_lock:
                result, lasting = self._resolve(sorted(patterns), topics)
            if lasting:  # not a timeout or a failed worker
                self._remember(result, len(topics))
            return result
        finally:
            for pattern in patterns:
                self.inflight.discard((pattern, len(topics)))
            if reserved:
                self._release()

    def _remember(self, result: Resolution, topic_count: int) -> None:
        with self._count_lock:
            for pattern, outcome in result.items():
                key = (pattern, topic_count)
                if key in self._results:
                    continue
                self._results[key] = outcome
                self._results_bytes += _size(pattern, outcome)
            while self._results_bytes > self.cache_bytes and self._results:
                (pattern, _), outcome = self._results.popitem(last=False)
                self._results_bytes -= _size(pattern, outcome)

    def _resolve(self, patterns: list[str], topics: list[str]) -> tuple[Resolution, bool]:
        try:
            conn = self._connection()
            # Topics are only ever added: their count says whether the worker has them.
            fresh = None if len(topics) == self._sent_topics else topics
            conn.send((fresh, patterns))
            self._sent_topics = len(topics)
            if conn.poll(self.timeout_ms / 1000):
                result: Resolution = conn.recv()
                return result, True
            self.timeouts += 1
            reason = f"it could not be compiled and matched within {self.timeout_ms} ms"
        except (EOFError, OSError):
            reason = "the regex worker failed"
        self._stop()
        return dict.fromkeys(patterns, reason), False

    def _connection(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.poll() is None:
            return self._conn
        self._stop()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "coordinator.shell.regex_worker",
                str(to_child_r),
                str(from_child_w),
                str(self.cache_bytes),
            ],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=_ROOT,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        conn = self._conn = _Duplex(from_child_r, to_child_w)
        self._sent_topics = -1
        # Its start (an interpreter, RE2) is not the pattern's time.
        if not conn.poll(STARTUP_TIMEOUT_S) or conn.recv() != READY:
            raise OSError("the regex worker did not start")
        return conn

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Stop the worker (a resolution under way is answered as failed)."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        if self._call_lock.acquire(blocking=False):
            try:
                self._stop()
            finally:
                self._call_lock.release()


def _size(pattern: str, outcome: frozenset[str] | str) -> int:
    names = len(outcome) if isinstance(outcome, str) else sum(len(t) + 64 for t in outcome)
    return 256 + len(pattern) + names


class _Duplex(Connection):
    """A Connection over two pipes (read from one fd, write to the other)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        super().__init__(read_fd, readable=True, writable=False)
        self._writer = Connection(write_fd, readable=False, writable=True)

    def send(self, obj: object) -> None:
        self._writer.send(obj)

    def close(self) -> None:
        self._writer.close()
        super().close()


def _serve(read_fd: int, write_fd: int, cache_bytes: int) -> None:
    inbox = Connection(read_fd, readable=True, writable=False)
    outbox = Connection(write_fd, readable=False, writable=True)
    cache = CompiledCache(cache_bytes)
    topics: list[str] = []
    outbox.send(READY)
    while True:
        try:
            fresh, patterns = inbox.recv()
        except (EOFError, OSError):
            return  # the daemon is gone
        if fresh is not None:
            topics = fresh
        outbox.send(dict(resolve(cache, patterns, topics)))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
