"""Where the coordinator partitions should live: spread evenly over the live nodes, moving
as few as possible (pure; every node computes the same plan from the same database view).

Each live node gets ``partitions // nodes`` partitions, and the first ``partitions % nodes``
of them (by id) one more. A partition stays with its owner while the owner is live and
within its share; the rest go, in partition order, to the nodes below their share, in id
order. A node joining therefore takes over only its share, from the nodes above theirs;
a node leaving spreads its partitions over the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def shares(partitions: int, live: Iterable[int]) -> dict[int, int]:
    nodes = sorted(set(live))
    if not nodes:
        return {}
    base, extra = divmod(partitions, len(nodes))
    return {n: base + (1 if i < extra else 0) for i, n in enumerate(nodes)}


def plan(partitions: int, live: Iterable[int], owners: Mapping[int, int]) -> dict[int, int]:
    """Partition -> the node that should own it (empty when no node is live)."""
    quota = shares(partitions, live)
    if not quota:
        return {}
    target: dict[int, int] = {}
    held: Counter[int] = Counter()
    for p in range(partitions):
        owner = owners.get(p)
        if owner in quota and held[owner] < quota[owner]:
            target[p] = owner
            held[owner] += 1
    takers = iter(n for n in sorted(quota) for _ in range(quota[n] - held[n]))
    for p in range(partitions):
        if p not in target:
            target[p] = next(takers)
    return target
