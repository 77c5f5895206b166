"""A group's SubscribedTopicRegex patterns and the topics they resolve to.

The state machine never compiles a client's pattern (compiling can take seconds, see
``coordinator/shared/topic_regex.py``): the caller resolves the patterns ``to_resolve`` names off
the event loop (the daemon in its regex worker, filtered by what the member may
describe), and hands the resolution in with the heartbeat (``ConsumerHeartbeatInput.
resolved``), as Kafka resolves regexes in its executor and applies the result to the
group. A pattern not resolved yet matches nothing. A pattern no member uses any more is
dropped (Kafka writes a tombstone for it).
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.shared.topic_regex import CompiledCache, Resolution, pattern_bytes, resolve

from .config import ConsumerGroupConfig
from .group import ConsumerGroup

#: How much of a refused pattern an error message quotes.
QUOTED_CHARS = 256


def to_resolve(
    g: ConsumerGroup | None,
    pattern: str | None,
    topic_count: int,
    config: ConsumerGroupConfig,
    now_ms: int,
) -> frozenset[str]:
    """The patterns a heartbeat subscribing to ``pattern`` needs resolved first: a pattern
    the group has not resolved, and all of the group's when topics were created since
    they were or they are older than ``group.consumer.regex.refresh.interval.ms`` (a
    pattern too long is refused before, and never resolved)."""
    max_bytes = config.regex_max_bytes
    wanted: set[str] = set()
    if pattern and pattern_bytes(pattern) <= max_bytes and (g is None or pattern not in g.resolved):
        wanted.add(pattern)
    if g is not None and g.resolved and _stale(g, topic_count, config, now_ms):
        wanted |= g.regexes()
        if pattern and pattern_bytes(pattern) <= max_bytes:
            wanted.add(pattern)
    return frozenset(wanted)


def _stale(g: ConsumerGroup, topic_count: int, config: ConsumerGroupConfig, now_ms: int) -> bool:
    if g.resolved_with_topics != topic_count:
        return True
    return now_ms - g.resolved_at_ms >= config.regex_refresh_interval_ms


def refused(g: ConsumerGroup | None, pattern: str, resolution: Resolution | None) -> str | None:
    """RE2's reason the member's new ``pattern`` is not valid, if its resolution says so
    (a pattern the group already uses was valid: a failed refresh keeps what it had)."""
    if resolution is None or (g is not None and pattern in g.resolved):
        return None
    outcome = resolution.get(pattern)
    return outcome if isinstance(outcome, str) else None


def apply(
    g: ConsumerGroup,
    resolution: Resolution,
    topic_count: int,
    new_pattern: str | None,
    now_ms: int,
) -> None:
    """Take the resolved patterns the group (or the member, with ``new_pattern``) uses."""
    in_use = g.regexes()
    if new_pattern is not None:
        in_use.add(new_pattern)
    for pattern, outcome in resolution.items():
        if pattern in in_use and not isinstance(outcome, str):
            g.resolved[pattern] = matched(outcome)
    if topic_count >= 0 and in_use <= resolution.keys():
        g.resolved_with_topics = topic_count  # all are current
        g.resolved_at_ms = now_ms
    g.recount()


def matched(topics: frozenset[str]) -> frozenset[str]:
    """The topics a resolution matched (one place for tests to make it wrong)."""
    return topics


def prune(g: ConsumerGroup) -> None:
    """Drop the patterns no member subscribes to any more."""
    if g.resolved:
        in_use = g.regexes()
        for pattern in [p for p in g.resolved if p not in in_use]:
            del g.resolved[pattern]


def restore(g: ConsumerGroup, patterns: Iterable[str], topics: list[str], max_bytes: int) -> None:
    """At load, the stored members' patterns matched here (they compiled once; one longer
    than allowed now matches nothing) and marked to be resolved again by the first
    heartbeat, which filters them by what its member may describe."""
    wanted = [p for p in patterns if pattern_bytes(p) <= max_bytes]
    for pattern, outcome in resolve(CompiledCache(0), wanted, topics).items():
        g.resolved[pattern] = frozenset() if isinstance(outcome, str) else matched(outcome)
    g.resolved_with_topics = -1


def quoted(pattern: str) -> str:
    if len(pattern) <= QUOTED_CHARS:
        return pattern
    return pattern[:QUOTED_CHARS] + f"... ({len(pattern)} characters)"
