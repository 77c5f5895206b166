"""Where the coordinator partitions should live: spread evenly over the live nodes, moving
as few as possible (pure; every node computes the same plan from the same database view).

Each live node gets ``partitions // nodes`` partitions, and the first ``partitions % nodes``
of them (by id) one more. A partition stays with its owner while the owner is live and
within its share; the rest go to the nodes below their share, each partition to its
*previous* owner (the node a failure took it from) when that node is one of them, else in
partition and id order. A node joining therefore takes over only its share, from the nodes
above theirs, and a node coming back gets back what it had, not someone else's.

Hysteresis: a node whose lease had run out and that renewed it again less than the settle
time ago (``settled`` leaves it out: restarted after ``kill -9``, resumed after a pause, or
the first to renew after the database came back) keeps what it still owns and takes
partitions nobody owns, but is given nothing another node holds, and does not take a dead
node's partitions: had every lease run out together, the first node back would otherwise
take everything and give it back a tick later. Once settled, it gets its share back (each
partition once). With no settled node, a dead node's partitions wait.
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


def plan(
    partitions: int,
    live: Iterable[int],
    owners: Mapping[int, int],
    settled: Iterable[int] | None = None,
    previous: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """Partition -> the node that should own it (absent: none yet). ``owners`` may name
    dead nodes; ``settled``: the live nodes that may be given partitions others hold (all
    live ones if None); ``previous``: partition -> the owner a failure took it from."""
    alive = set(live)
    quota = shares(partitions, alive)
    if not quota:
        return {}
    steady = alive if settled is None else set(settled) & alive
    before = previous or {}
    target: dict[int, int] = {}
    # Nodes not yet settled keep what they own (within their share).
    held: Counter[int] = Counter()
    for p in range(partitions):
        owner = owners.get(p)
        if owner in alive and owner not in steady and held[owner] < quota[owner]:
            target[p] = owner
            held[owner] += 1
    # The settled nodes share the rest evenly; each keeps what it owns within its share,
    # those that came from a node now short of its share last.
    rest = partitions - sum(held.values())
    room = shares(rest, steady) if steady else {}
    short = {n for n in alive if held[n] < quota[n]}

    def keep_order(p: int) -> tuple[bool, int]:
        return (before.get(p) in short and before.get(p) != owners.get(p), p)

    for p in sorted(range(partitions), key=keep_order):
        owner = owners.get(p)
        if p not in target and owner in room and held[owner] < room[owner]:
            target[p] = owner
            held[owner] += 1
    # What is left: to its previous owner if it has room, else in order. A node not yet
    # settled takes only what nobody owns; a dead node's partitions need a settled taker.
    cap = {**{n: quota[n] for n in alive if n not in steady}, **room}
    for p in range(partitions):
        if p in target:
            continue
        free = owners.get(p) is None
        allowed = [n for n in sorted(cap) if held[n] < cap[n] and (free or n in steady)]
        if not allowed:
            continue
        home = before.get(p)
        taker = home if home in allowed else allowed[0]
        target[p] = taker
        held[taker] += 1
    return target
