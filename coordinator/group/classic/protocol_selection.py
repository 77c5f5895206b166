"""Choosing the group's protocol (spec 4.11).

Candidates are the protocol names every member supports; each member votes for its most
preferred candidate and the most votes win. Kafka breaks ties by Java HashMap iteration
order, which is unspecified. Our rule: **among the top-voted names, the lexicographically
smallest (by code point) wins** - deterministic, and independent of member order and of
who leads, so replacing a static member never flips the choice by itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from .member import Member


def candidate_protocols(support: Mapping[str, int], member_count: int) -> set[str]:
    """Names supported by all ``member_count`` members (``support``: name -> members)."""
    return {name for name, count in support.items() if count == member_count}


def select_protocol(members: Iterable[Member], candidates: set[str]) -> str | None:
    votes: Counter[str] = Counter()
    for member in members:
        vote = member.vote(candidates)
        if vote is not None:
            votes[vote] += 1
    if not votes:
        return None
    best = max(votes.values())
    return min(name for name, count in votes.items() if count == best)
