"""Each member of a group keeps its colour in the partition picture across rebalances.

Colours follow identities, not the order members are listed in: a member keeps the colour
it was given while it stays in the group (a static member by its instance id, so it keeps
it across restarts too), a newcomer takes the lowest colour no present member has, and a
partition that did not move keeps its colour. Up to ``filters.PALETTE`` members get
distinct colours; beyond, colours repeat.
"""

from __future__ import annotations

from collections.abc import Iterable

from .filters import PALETTE


def identity(member_id: str, instance_id: str | None) -> str:
    return f"i:{instance_id}" if instance_id else f"m:{member_id}"


class MemberColours:
    """Per group, identity -> colour index; only the present members are remembered."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, int]] = {}

    def of(self, group_id: str, identities: Iterable[str]) -> dict[str, int]:
        """The colour index of each of the group's present members (in the order given)."""
        wanted = list(dict.fromkeys(identities))
        known = self._groups.get(group_id, {})
        kept = {i: known[i] for i in wanted if i in known}
        taken = set(kept.values())
        for ident in wanted:
            if ident in kept:
                continue
            free = next((c for c in range(len(PALETTE)) if c not in taken), None)
            # Past the palette: the next index (colours repeat, assigned in arrival order).
            colour = free if free is not None else len(kept)
            kept[ident] = colour
            taken.add(colour)
        if kept:
            self._groups[group_id] = kept
        else:
            self._groups.pop(group_id, None)
        return {i: kept[i] for i in wanted}

    def forget(self, group_id: str) -> None:
        self._groups.pop(group_id, None)
