"""What a state-machine call asks its driver to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .events import GroupEvent
from .frozen import frozen
from .records import Record

#: The caller's request token: whatever the driver passes in comes back with its reply.
T = TypeVar("T")


@frozen
class Schedule:
    """Arm (or move) the timer ``key`` to fire at ``deadline_ms``."""

    key: str
    deadline_ms: int


@frozen
class Cancel:
    key: str


TimerChange = Schedule | Cancel


@dataclass(slots=True)
class Effects(Generic[T]):
    #: (the request's token, its result): ``JoinGroupResult``, ``SyncGroupResult``...
    replies: list[tuple[T, object]] = field(default_factory=list)
    timers: list[TimerChange] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    events: list[GroupEvent] = field(default_factory=list)

    def reply(self, token: T, result: object) -> None:
        self.replies.append((token, result))
