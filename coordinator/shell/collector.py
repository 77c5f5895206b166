"""The garbage collector's settings for the daemon.

CPython starts a full collection (every tracked object) whenever the objects that survived
the younger generations grow by a quarter, which they do with every member and connection
a rebalance adds: with 5,000 members joining, three or four full collections of ~250,000
objects each found nothing to free and took a quarter of the daemon's CPU. What the daemon
allocates per request is freed by reference counting (a parked reply drops its callbacks
once answered, ``handlers/outcome.py``), so collections are made rarer, and the objects made
at start (modules, codecs: about 55,000) are moved out of the collector's sight for good.
"""

from __future__ import annotations

import gc

#: Allocations (net of frees) between young collections: CPython's default is 700.
YOUNG_THRESHOLD = 10_000


def tune() -> None:
    """Call once, at start, after the imports and before serving."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
