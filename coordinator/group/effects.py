"""What a state-machine call asks its driver to do."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Schedule:
    """Arm (or move) the timer ``key`` to fire at ``deadline_ms``."""

    key: str
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Cancel:
    key: str


TimerChange = Schedule | Cancel


@dataclass(slots=True)
class Effects:
    replies: list[tuple[object, object]] = field(default_factory=list)
    timers: list[TimerChange] = field(default_factory=list)
    records: list[object] = field(default_factory=list)
    events: list[object] = field(default_factory=list)

    def reply(self, token: object, result: object) -> None:
        self.replies.append((token, result))
