"""The ``uniform`` target assignment of a homogeneous group, kept between computations so
that each new one costs what moves (Kafka 4.1's inverted partition-to-owner index and
member-delta assignment builder), not every member and partition again.

Kept: who owns each partition, each member's partitions, the members by how many they
hold, and the partitions nobody holds. A computation applies the members added and
removed since the last one, then balances as ``uniform`` does: each member keeps what it
has up to its quota (``P // N``, and ``P % N`` members one more), and what is shed or
free goes to the members below their quota. The extra partitions go to members that
already hold that many, so a member gives up only what balance demands.

Only the members touched (shed, filled, added) are visited: the size buckets let a
computation skip the members already at their quota. Order is that of the dicts, never
of a set of strings (their hash order changes from run to run), so results are
deterministic for a given history.
"""

from __future__ import annotations

from collections.abc import Mapping

from .group import ConsumerGroup
from .member import Partitions

TP = tuple[str, int]


class UniformState:
    __slots__ = ("by_size", "counts", "free", "owner", "parts")

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = dict(counts)
        #: Who holds each partition, and each member's partitions (dicts as ordered sets).
        self.owner: dict[TP, str] = {}
        self.parts: dict[str, dict[TP, None]] = {}
        #: Members by the number of partitions they hold.
        self.by_size: dict[int, dict[str, None]] = {}
        #: Partitions nobody holds; popped from the end, so kept in descending order.
        self.free: dict[TP, None] = {}

    # -- building and applying changes --------------------------------------------------

    @classmethod
    def build(cls, g: ConsumerGroup, counts: Mapping[str, int]) -> tuple[UniformState, set[str]]:
        """The state from the group's current target (once: after a load, a change of
        topics or of assignor); also the members whose target it had to correct."""
        state = cls(counts)
        corrected: set[str] = set()
        for member_id in g.members:
            mine: dict[TP, None] = {}
            target = g.target.get(member_id)
            for topic, ps in sorted(target.items()) if target else ():
                count = counts.get(topic, 0)
                for p in sorted(ps):
                    tp = (topic, p)
                    if p < count and tp not in state.owner:
                        state.owner[tp] = member_id
                        mine[tp] = None
                    else:
                        corrected.add(member_id)  # gone, unsubscribed or held twice
            state._place(member_id, mine)
        state.free = {
            tp: None
            for topic in sorted(counts, reverse=True)
            for p in range(counts[topic] - 1, -1, -1)
            if (tp := (topic, p)) not in state.owner
        }
        return state, corrected

    def fits(self, counts: Mapping[str, int]) -> bool:
        """Whether the state can carry on with these topics: the same ones, none shrunk."""
        return counts.keys() == self.counts.keys() and all(
            counts[t] >= n for t, n in self.counts.items()
        )

    def grow(self, counts: Mapping[str, int]) -> None:
        """Partitions added to the subscribed topics are free."""
        added = [
            (t, p) for t in sorted(counts) for p in range(self.counts[t], counts[t])
        ]  # ascending; the free dict is popped from its end
        if not added:
            return
        self.counts = dict(counts)
        rest = list(self.free)
        self.free = dict.fromkeys(reversed(added))
        self.free.update(dict.fromkeys(rest))

    def apply(self, g: ConsumerGroup, changes: Mapping[str, None]) -> set[str]:
        """Members added to or removed from the group since the last computation; returns
        the members whose partitions changed."""
        changed: set[str] = set()
        for member_id in changes:
            present = member_id in g.members
            known = member_id in self.parts
            if known and not present:
                self._drop(member_id)
            elif present and not known:
                # A static member's new id takes over its predecessor's target: what of it
                # is still free comes back to it.
                mine: dict[TP, None] = {}
                target = g.target.get(member_id)
                for topic, ps in sorted(target.items()) if target else ():
                    for p in sorted(ps):
                        tp = (topic, p)
                        if tp in self.free:
                            del self.free[tp]
                            self.owner[tp] = member_id
                            mine[tp] = None
                if target and len(mine) != sum(map(len, target.values())):
                    changed.add(member_id)
                self._place(member_id, mine)
        return changed

    def _place(self, member_id: str, mine: dict[TP, None]) -> None:
        self.parts[member_id] = mine
        self.by_size.setdefault(len(mine), {})[member_id] = None

    def _drop(self, member_id: str) -> None:
        mine = self.parts.pop(member_id)
        self._unsize(member_id, len(mine))
        for tp in mine:
            del self.owner[tp]
            self.free[tp] = None

    def _unsize(self, member_id: str, size: int) -> None:
        bucket = self.by_size[size]
        del bucket[member_id]
        if not bucket:
            del self.by_size[size]

    # -- balancing --------------------------------------------------------------------

    def balance(self) -> set[str]:
        """Bring every member to its quota, moving as few partitions as balance allows;
        returns the members whose partitions changed."""
        members = len(self.parts)
        if not members:
            return set()
        total = sum(self.counts.values())
        quota, extra = divmod(total, members)
        changed: set[str] = set()
        # Members holding quota + 1 keep it while extra slots last; the last placed of the
        # others give one back.
        at_extra = self.by_size.get(quota + 1, {})
        held = len(at_extra)
        for _ in range(held - extra):
            member_id = next(reversed(at_extra))
            self._resize(member_id, quota + 1, quota)
            changed.add(member_id)
        extra = max(extra - held, 0)
        # Members above quota + 1 keep quota + 1 while extra slots last, then quota.
        for size in sorted((s for s in self.by_size if s > quota + 1), reverse=True):
            for member_id in list(self.by_size[size]):
                keep = quota + 1 if extra > 0 else quota
                extra -= keep > quota
                self._resize(member_id, size, keep)
                changed.add(member_id)
        # Fill: members below quota reach it (and quota + 1 while extra slots last), then
        # members at quota take the extra slots left.
        for size in sorted(s for s in self.by_size if s < quota):
            for member_id in list(self.by_size[size]):
                keep = quota + 1 if extra > 0 else quota
                extra -= keep > quota
                self._resize(member_id, size, keep)
                changed.add(member_id)
        if extra > 0 and quota in self.by_size:
            at_quota = self.by_size[quota]
            for member_id in [m for m, _ in zip(at_quota, range(extra), strict=False)]:
                self._resize(member_id, quota, quota + 1)
                changed.add(member_id)
        if self.free:
            raise RuntimeError("partitions were left unassigned")
        return changed

    def _resize(self, member_id: str, size: int, to: int) -> None:
        mine = self.parts[member_id]
        if to < size:
            for _ in range(size - to):
                tp, _none = mine.popitem()
                del self.owner[tp]
                self.free[tp] = None
        else:
            for _ in range(to - size):
                tp, _none = self.free.popitem()
                self.owner[tp] = member_id
                mine[tp] = None
        self._unsize(member_id, size)
        self.by_size.setdefault(to, {})[member_id] = None

    def target_of(self, member_id: str) -> Partitions:
        out: dict[str, set[int]] = {}
        for topic, p in self.parts[member_id]:
            out.setdefault(topic, set()).add(p)
        return {topic: frozenset(ps) for topic, ps in out.items()}
