"""The console's memory of what happened: an event sink beside the journal, kept in memory.

The state machine holds what *is* (groups, members, offsets); this holds what *happened*,
bounded: each group's last rebalances with their phases, the time it spent in each state,
when its rebalances started in the last hour; node-wide, rebalances per minute for the
last hour, commits per second, and the last journal events. It is fed on the event loop
(``Runtime.emit``) whether or not ``--journal-dir`` is given, and costs O(1) per event.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..group import events
from ..shared.events import NodeEvent

#: Rebalances kept per group for its timeline.
REBALANCES_PER_GROUP = 20
#: Rebalance start times kept per group (for "in the last hour"); a storm beyond is capped.
STARTS_PER_GROUP = 1000
#: Journal events kept node-wide.
RECENT_EVENTS = 200
HOUR_MS = 3_600_000
MINUTE_MS = 60_000
#: Commits per second are averaged over this many seconds.
COMMIT_WINDOW_S = 10


@dataclass(slots=True)
class Rebalance:
    """One rebalance of a group, from RebalanceStarted to Stable (or Empty)."""

    started_ms: int
    from_generation: int
    trigger: str
    reason: str
    generation: int | None = None  # the generation it made
    join_ms: int | None = None  # the join phase
    sync_ms: int | None = None  # the sync phase
    members: int | None = None
    leader: str | None = None
    protocol: str | None = None
    ended_ms: int | None = None
    outcome: str = "in progress"  # Stable, Empty, restarted (another rebalance), or deleted
    member: str | None = None  # the member whose arrival started it, when the reason has none

    def as_dict(self) -> dict[str, object]:
        return {
            "started_ms": self.started_ms,
            "from_generation": self.from_generation,
            "generation": self.generation,
            "trigger": self.trigger,
            "reason": self.reason,
            "join_ms": self.join_ms,
            "sync_ms": self.sync_ms,
            "duration_ms": None if self.ended_ms is None else self.ended_ms - self.started_ms,
            "members": self.members,
            "leader": self.leader,
            "protocol": self.protocol,
            "ended_ms": self.ended_ms,
            "outcome": self.outcome,
            "member": self.member,
        }


@dataclass(slots=True)
class GroupActivity:
    rebalances: deque[Rebalance] = field(default_factory=lambda: deque(maxlen=REBALANCES_PER_GROUP))
    starts: deque[int] = field(default_factory=lambda: deque(maxlen=STARTS_PER_GROUP))
    #: Milliseconds spent in each state before the current one (since this node loaded it).
    state_ms: dict[str, int] = field(default_factory=dict)
    state: str | None = None
    state_since_ms: int | None = None
    last_commit_ms: int | None = None
    commits: int = 0  # partitions committed since this node loaded the group

    @property
    def last(self) -> Rebalance | None:
        return self.rebalances[-1] if self.rebalances else None

    def starts_since(self, since_ms: int) -> int:
        return len(self.starts) - bisect.bisect_left(self.starts, since_ms)

    def time_in_states(self, now_ms: int) -> dict[str, int]:
        spent = dict(self.state_ms)
        if self.state is not None and self.state_since_ms is not None:
            spent[self.state] = spent.get(self.state, 0) + max(now_ms - self.state_since_ms, 0)
        return spent


class Activity:
    """``activity(event)`` is the event sink; the rest is read by the console's views."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.groups: dict[str, GroupActivity] = {}
        #: (minute, rebalances started in it), oldest first, the last hour.
        self._per_minute: deque[list[int]] = deque()
        #: (second, partitions committed in it), oldest first, the last COMMIT_WINDOW_S.
        self._commits: deque[list[int]] = deque()
        #: The journal's events but commits (those are counted: ``commits_total``).
        self.recent: deque[tuple[int, NodeEvent]] = deque(maxlen=RECENT_EVENTS)
        #: Partitions committed since the daemon started.
        self.commits_total = 0
        #: Bumped by every event: a live page re-renders only when it moved (or time did).
        self.version = 0
        #: The member that just joined each group (its rebalance comes next).
        self._joined: dict[str, str] = {}

    def group(self, group_id: str) -> GroupActivity | None:
        return self.groups.get(group_id)

    def _of(self, group_id: str) -> GroupActivity:
        found = self.groups.get(group_id)
        if found is None:
            found = self.groups[group_id] = GroupActivity()
        return found

    def __call__(self, event: NodeEvent) -> None:
        now = self.now_ms()
        self.version += 1
        match event:
            case events.LimitReached() | events.GroupConfigCapped():
                return  # not a journal entry
            case events.MemberJoined():
                self._joined[event.group_id] = event.member_id
            case events.RebalanceStarted():
                self._rebalance_started(event, now)
            case events.JoinCompleted():
                last = self._of(event.group_id).last
                # An emptied group is Empty before its join completes: still this one's.
                if last is not None and last.generation is None and last.outcome != "restarted":
                    last.join_ms = event.duration_ms
                    last.generation = event.generation_id
                    last.members = event.members
                    last.leader = event.leader
                    last.protocol = event.protocol_name
            case events.SyncCompleted():
                last = self._of(event.group_id).last
                if last is not None and last.generation == event.generation_id:
                    last.sync_ms = event.duration_ms
            case events.StateChanged():
                self._state_changed(event, now)
            case events.GroupLoaded():
                g = self._of(event.group_id)
                g.state, g.state_since_ms = event.state, now
            case events.OffsetsCommitted():
                g = self._of(event.group_id)
                g.last_commit_ms = now
                g.commits += event.count
                self.commits_total += event.count
                self._count_commits(now, event.count)
                return  # counted, not listed: a consumer commits every few seconds
            case events.TargetAssignmentComputed():
                self._target_computed(event)
            case events.GroupDeleted() | events.GroupUnloaded():
                self.groups.pop(event.group_id, None)
                self._joined.pop(event.group_id, None)
            case _:
                pass
        self.recent.append((now, event))

    def _rebalance_started(self, e: events.RebalanceStarted, now: int) -> None:
        g = self._of(e.group_id)
        last = g.last
        joined = self._joined.pop(e.group_id, None)
        named = joined is None or joined in e.reason
        member = None if named or e.trigger is not events.RebalanceTrigger.NEW_MEMBER else joined
        if (
            last is not None
            and last.outcome == "in progress"
            and last.generation is None
            and e.generation_id == last.from_generation + 1
        ):
            # KIP-848: the group epoch moved again before a target was computed: one
            # target will serve both changes, so one rebalance (a classic restart keeps
            # the generation it replaces).
            last.reason = f"{last.reason}; {e.reason}" + (f" ({member})" if member else "")
            if e.trigger.value not in last.trigger.split(", "):
                last.trigger = f"{last.trigger}, {e.trigger.value}"
        else:
            if last is not None and last.outcome == "in progress":
                last.outcome, last.ended_ms = "restarted", now
            rebalance = Rebalance(now, e.generation_id, e.trigger.value, e.reason)
            rebalance.member = member
            g.rebalances.append(rebalance)
        g.starts.append(now)
        minute = now // MINUTE_MS
        if self._per_minute and self._per_minute[-1][0] == minute:
            self._per_minute[-1][1] += 1
        else:
            self._per_minute.append([minute, 1])
        while self._per_minute and self._per_minute[0][0] <= minute - 60:
            self._per_minute.popleft()

    def _target_computed(self, e: events.TargetAssignmentComputed) -> None:
        """A KIP-848 rebalance has no join or sync phase: the epoch it made, its members
        and assignor come with the target; it ends when the group is Stable again."""
        last = self._of(e.group_id).last
        if last is not None and last.outcome == "in progress":
            last.generation = e.group_epoch
            last.members = e.members
            last.protocol = e.assignor

    def _state_changed(self, e: events.StateChanged, now: int) -> None:
        g = self._of(e.group_id)
        if g.state is not None and g.state_since_ms is not None:
            g.state_ms[g.state] = g.state_ms.get(g.state, 0) + max(now - g.state_since_ms, 0)
        g.state, g.state_since_ms = e.new_state, now
        last = g.last
        if (
            last is not None
            and last.outcome == "in progress"
            and e.new_state in ("Stable", "Empty")
        ):
            last.outcome, last.ended_ms = e.new_state, now

    def _count_commits(self, now: int, count: int) -> None:
        second = now // 1000
        if self._commits and self._commits[-1][0] == second:
            self._commits[-1][1] += count
        else:
            self._commits.append([second, count])
        while self._commits and self._commits[0][0] <= second - COMMIT_WINDOW_S:
            self._commits.popleft()

    # -- node-wide figures ------------------------------------------------------------------

    def rebalances_per_minute(self, now_ms: int) -> list[tuple[int, int]]:
        """(minute start in ms, rebalances started), for each of the last 60 minutes."""
        minute = now_ms // MINUTE_MS
        counts = {m: c for m, c in self._per_minute}
        return [((m) * MINUTE_MS, counts.get(m, 0)) for m in range(minute - 59, minute + 1)]

    def rebalances_last_hour(self, now_ms: int) -> int:
        return sum(c for _, c in self.rebalances_per_minute(now_ms))

    def commits_per_second(self, now_ms: int) -> float:
        second = now_ms // 1000
        recent = sum(c for s, c in self._commits if s > second - COMMIT_WINDOW_S)
        return recent / COMMIT_WINDOW_S
