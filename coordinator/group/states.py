"""Group states and the legal transitions between them (spec 4.2), checked in one place."""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


E, PR, CR, S, D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)

#: target state -> the states it may be entered from.
LEGAL_SOURCES: dict[GroupState, frozenset[GroupState]] = {
    PR: frozenset({S, CR, E}),
    CR: frozenset({PR}),
    S: frozenset({CR}),
    E: frozenset({PR}),
    D: frozenset({S, PR, CR, E, D}),  # Dead -> Dead is legal (ClassicGroupTest)
}


class IllegalStateTransition(RuntimeError):
    def __init__(self, group_id: str, source: GroupState, target: GroupState) -> None:
        super().__init__(f"group {group_id!r}: illegal transition {source.value} -> {target.value}")


def check_transition(group_id: str, source: GroupState, target: GroupState) -> None:
    if source not in LEGAL_SOURCES[target]:
        raise IllegalStateTransition(group_id, source, target)


def parse_state(name: str) -> GroupState | None:
    """A state by its wire name, case-insensitively (ListGroups' StatesFilter)."""
    lowered = name.lower()
    return next((s for s in GroupState if s.value.lower() == lowered), None)
