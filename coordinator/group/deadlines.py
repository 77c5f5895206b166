"""The timers this state machine asks its driver to run, and the bookkeeping that makes
stale firings harmless.

Keys (one timer per key; scheduling a key again replaces its deadline):

* ``heartbeat/<group>/<member>`` - a member's session (or new-member join timeout, spec
  4.10). Pending KIP-394 member ids use the same key: their timer is the session timeout of
  the JoinGroup that created them (as in Kafka).
* ``join/<group>`` - the join phase: the initial-rebalance delay or the rebalance timeout.
* ``sync/<group>`` - waiting for every member's SyncGroup after a join phase completed.
* ``consumer-session/<group>/<member>`` - a KIP-848 member's session (consumer/).
* ``consumer-rebalance/<group>/<member>`` - a KIP-848 member revoking partitions: armed
  for the member epoch it must leave (its rebalance timeout).
* ``consumer-assign/<group>`` - a KIP-848 group's next target assignment, with the
  heartbeats that wait for it (consumer/coalesce.py).

Ids are escaped (``%`` -> ``%25``, ``/`` -> ``%2F``) so that different (group, member) pairs
never share a key. Keys are never parsed back: every armed key maps to what it was armed
for. A firing counts only if the key is still armed and its recorded deadline has passed;
the handlers then re-check the group (state, generation, member).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from .effects import Cancel, Effects, Schedule


class TimerKind(Enum):
    HEARTBEAT = "heartbeat"
    JOIN = "join"
    SYNC = "sync"
    CONSUMER_SESSION = "consumer-session"
    CONSUMER_REBALANCE = "consumer-rebalance"
    CONSUMER_ASSIGN = "consumer-assign"


def _escape(part: str) -> str:
    if "/" in part or "%" in part:
        return part.replace("%", "%25").replace("/", "%2F")
    return part


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat/{_escape(group_id)}/{_escape(member_id)}"


def join_key(group_id: str) -> str:
    return f"join/{_escape(group_id)}"


def sync_key(group_id: str) -> str:
    return f"sync/{_escape(group_id)}"


def consumer_session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session/{_escape(group_id)}/{_escape(member_id)}"


def consumer_rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance/{_escape(group_id)}/{_escape(member_id)}"


def consumer_assign_key(group_id: str) -> str:
    return f"consumer-assign/{_escape(group_id)}"


@dataclass(slots=True)
class Armed:
    """What a key was armed for."""

    kind: TimerKind
    deadline_ms: int
    group_id: str
    member_id: str = ""
    generation_id: int = -1  # sync timers: the generation; consumer rebalance: member epoch


class Deadlines:
    def __init__(self) -> None:
        self._armed: dict[str, Armed] = {}

    def __len__(self) -> int:
        return len(self._armed)

    @property
    def armed(self) -> dict[str, Armed]:
        """Every armed key: the compiled heartbeat lane (``coordinator/fastlane``) moves a
        session's deadline in place here, as ``move_heartbeat`` does for a later one."""
        return self._armed

    def deadline(self, key: str) -> int | None:
        armed = self._armed.get(key)
        return None if armed is None else armed.deadline_ms

    def schedule(self, out: Effects[Any], key: str, armed: Armed) -> None:
        self._armed[key] = armed
        out.timers.append(Schedule(key, armed.deadline_ms))

    def schedule_heartbeat(
        self,
        out: Effects[Any],
        key: str,
        group_id: str,
        member_id: str,
        deadline_ms: int,
        kind: TimerKind = TimerKind.HEARTBEAT,
    ) -> None:
        # The hot path (every Heartbeat): move the deadline in place.
        armed = self._armed.get(key)
        if armed is None:
            self._armed[key] = Armed(kind, deadline_ms, group_id, member_id)
        else:
            armed.deadline_ms = deadline_ms
        out.timers.append(Schedule(key, deadline_ms))

    def move_heartbeat(
        self,
        key: str,
        group_id: str,
        member_id: str,
        deadline_ms: int,
        kind: TimerKind = TimerKind.HEARTBEAT,
    ) -> bool:
        """A heartbeat moves its session deadline in place; True when the driver must be
        told (a new timer, or a deadline earlier than before: its timer would fire late).
        A later deadline needs nothing: the driver's timer fires at the old one and
        ``take_due`` re-arms it for the new one."""
        armed = self._armed.get(key)
        if armed is None:
            self._armed[key] = Armed(kind, deadline_ms, group_id, member_id)
            return True
        earlier = deadline_ms < armed.deadline_ms
        armed.deadline_ms = deadline_ms
        return earlier

    def cancel(self, out: Effects[Any], key: str) -> None:
        if self._armed.pop(key, None) is not None:
            out.timers.append(Cancel(key))

    def cancel_all(self, out: Effects[Any]) -> None:
        out.timers.extend(Cancel(key) for key in self._armed)
        self._armed.clear()

    def take_due(self, out: Effects[Any], key: str, now_ms: int) -> Armed | None:
        """Disarm and return ``key`` if it is armed and due; None for a stale firing. A
        firing before the armed deadline (moved by heartbeats the driver was not told of)
        re-arms the driver's timer for it."""
        armed = self._armed.get(key)
        if armed is None:
            return None
        if armed.deadline_ms > now_ms:
            out.timers.append(Schedule(key, armed.deadline_ms))
            return None
        del self._armed[key]
        return armed
