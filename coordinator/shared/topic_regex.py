"""SubscribedTopicRegex matching: RE2 syntax (google-re2, the C++ library that Kafka's
RE2/J ports), matched against whole topic names as Java's ``Matcher.matches()`` does.

Matching is linear in the name, but compiling is not: a pattern of a few kilobytes with
counted repetitions takes seconds, holding the interpreter lock all along. So the daemon
compiles clients' patterns only in its regex worker process (``regex_worker.py``), never
on the event loop. This module is what that process runs; it imports nothing else of the
project, so the worker starts quickly.

Compiled patterns are cached within a byte budget (an estimate: RE2 keeps the parsed
pattern and its programs, measured at about 6-7 bytes per pattern byte), least recently
used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad pattern is its error, not a line on our stderr

#: Cost of a cached pattern beyond its own bytes (objects, program headers), and the bytes
#: counted per pattern byte (measured: 6-7).
ENTRY_OVERHEAD = 4096
BYTES_PER_PATTERN_BYTE = 8


class InvalidRegex(ValueError):
    pass


def pattern_bytes(pattern: str) -> int:
    return len(pattern.encode("utf-8", "surrogatepass"))


def cost(pattern: str) -> int:
    """What a compiled ``pattern`` is counted as in the cache."""
    return ENTRY_OVERHEAD + BYTES_PER_PATTERN_BYTE * pattern_bytes(pattern)


class CompiledCache:
    """Compiled patterns, least recently used first out, within ``budget`` bytes (a
    pattern costlier than the whole budget is compiled and not kept)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._entries: OrderedDict[str, re2._Regexp] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, pattern: str) -> re2._Regexp:
        with self._lock:
            compiled = self._entries.get(pattern)
            if compiled is not None:
                self._entries.move_to_end(pattern)
                return compiled
        compiled = _compile(pattern)
        size = cost(pattern)
        if size > self.budget:
            return compiled
        with self._lock:
            if pattern not in self._entries:
                self._entries[pattern] = compiled
                self.used += size
            while self.used > self.budget:
                old, _ = self._entries.popitem(last=False)
                self.used -= cost(old)
        return compiled


def _compile(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidRegex(str(reason)) from None


#: Matches each pattern to the topics it names, or RE2's reason it does not compile.
Resolution = Mapping[str, frozenset[str] | str]


def resolve(cache: CompiledCache, patterns: Iterable[str], topics: list[str]) -> Resolution:
    result: dict[str, frozenset[str] | str] = {}
    for pattern in patterns:
        try:
            compiled = cache.get(pattern)
        except InvalidRegex as exc:
            result[pattern] = str(exc)
            continue
        result[pattern] = frozenset(t for t in topics if compiled.fullmatch(t) is not None)
    return result
