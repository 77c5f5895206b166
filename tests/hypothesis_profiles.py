"""Hypothesis profiles, loaded by conftest.py.

``ci`` (``make test``): derandomized, so that a rerun sees the same examples and a red
build is reproducible, not a dice roll. ``fast`` (``make test-fast``, which leaves the
integration tests out): the same examples, fewer of them where a property runs once per
case of a sweep (every API version: hundreds of cases, most of the unit tests' time).
``make test`` still runs every property with its full count.
"""

from __future__ import annotations

from hypothesis import settings

CI = "ci"
FAST = "fast"

settings.register_profile(CI, derandomize=True, print_blob=True)
settings.register_profile(FAST, parent=settings.get_profile(CI))


def examples(full: int, fast: int) -> int:
    """A property's ``max_examples``: ``full`` under ``ci``, ``fast`` under ``fast``.
    Read when the test module is imported, after conftest.py has chosen the profile."""
    return fast if settings.get_current_profile_name() == FAST else full
