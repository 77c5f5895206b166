"""SubscribedTopicRegex: RE2 syntax (google-re2, the C++ library that Kafka's RE2/J ports),
matched against whole topic names as Java's ``Matcher.matches()`` does. RE2 runs in time
linear in the name, so a hostile pattern cannot stall the coordinator."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad pattern is its error, not a line on our stderr


class InvalidRegex(ValueError):
    pass


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidRegex(str(reason)) from None


def check(pattern: str) -> None:
    """Raise ``InvalidRegex`` with RE2's reason if ``pattern`` does not compile."""
    _compiled(pattern)


def matching(pattern: str, topics: Iterable[str]) -> frozenset[str]:
    regex = _compiled(pattern)
    return frozenset(t for t in topics if regex.fullmatch(t) is not None)
