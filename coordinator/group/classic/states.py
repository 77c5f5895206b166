"""Classic group states and the legal transitions between them (spec 4.2).

What each state means and which requests it answers how (spec 4.3):

* ``Empty`` - no members (offsets may remain). JoinGroup adds the first member and starts
  the initial, delayed rebalance; Sync/Heartbeat answer UNKNOWN_MEMBER_ID.
* ``PreparingRebalance`` - the join phase: members (re)send JoinGroup and it is parked until
  everyone has joined or the join timer fires. Heartbeat answers REBALANCE_IN_PROGRESS.
* ``CompletingRebalance`` - JoinGroup answered, waiting for the leader's SyncGroup with the
  assignment; followers' SyncGroups are parked until then.
* ``Stable`` - assignment handed out; SyncGroup answers at once with the stored assignment.
* ``Dead`` - removed (deleted, expired or unloaded); requests get COORDINATOR_NOT_AVAILABLE.

The transition table is data, checked in exactly one place: ``check_transition``, which
``ClassicGroup.transition`` calls for every state change.
"""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: target state -> the states it may be entered from (spec 4.2).
LEGAL_SOURCES: dict[GroupState, frozenset[GroupState]] = {
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    EMPTY: frozenset({PREPARING_REBALANCE}),
    # Dead -> Dead is legal: ClassicGroupTest.testDeadToDeadIllegalTransition asserts it.
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A bug: the state machine tried a transition spec 4.2 does not allow."""

    def __init__(self, group_id: str, source: GroupState, target: GroupState) -> None:
        super().__init__(f"group {group_id!r}: illegal transition {source.value} -> {target.value}")
        self.group_id = group_id
        self.source = source
        self.target = target


def check_transition(group_id: str, source: GroupState, target: GroupState) -> None:
    if source not in LEGAL_SOURCES[target]:
        raise IllegalStateTransition(group_id, source, target)


def can_rebalance(state: GroupState) -> bool:
    """Whether a rebalance may start from ``state`` (Kafka's ``canRebalance``)."""
    return state in LEGAL_SOURCES[PREPARING_REBALANCE]


_BY_LOWER_NAME = {s.value.lower(): s for s in GroupState}


def parse_state(name: str) -> GroupState | None:
    """A state by its wire name, case-insensitively (ListGroups' StatesFilter)."""
    return _BY_LOWER_NAME.get(name.strip().lower())
