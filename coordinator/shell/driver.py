"""The one driver of the state machine's ``Effects``, sans-IO: the daemon's runtime and the
tests' drivers carry them out through it, and differ only in what they plug in.

What it does with a call's ``Effects``: timer changes go to the timers, events to ``emit``;
replies are answered at once when nothing is to be written, else they wait for the write:
``write(batch)`` starts it (the store seam: the runtime writes to its store, a test keeps
the batch or reports it stored at once) and whoever did the writing reports it back with
``written(batch, error)``. The state machine then learns what is stored
(``GroupCoordinator.written``: it releases answers that waited for it, or rolls a group
back), and only then are the batch's replies answered, or failed with the write's error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..group.coordinator import GroupCoordinator
from ..group.effects import Cancel, Effects, Schedule
from ..group.events import GroupEvent
from ..group.records import Record

T = TypeVar("T")
W = TypeVar("W")


class Timers(Protocol):
    def schedule(self, key: str, deadline_ms: int) -> None: ...

    def cancel(self, key: str) -> None: ...


@dataclass(slots=True)
class Batch(Generic[T]):
    """One write: the records and topics to persist, and the replies that wait for it."""

    records: list[Record]
    topics: list[tuple[str, int]]
    replies: list[tuple[T, object]] = field(default_factory=list)


class EffectsDriver(Generic[T, W]):
    """Carries out ``Effects`` for ``groups``; ``W`` is what ``write`` returns (the
    runtime's future of the write), handed back to the caller of ``apply``."""

    __slots__ = ("answer", "emit", "fail", "groups", "now_ms", "timers", "write")

    def __init__(
        self,
        groups: GroupCoordinator[T],
        *,
        timers: Timers,
        write: Callable[[Batch[T]], W],
        emit: Callable[[GroupEvent], None],
        answer: Callable[[T, object], None],
        fail: Callable[[T, BaseException], None],
        now_ms: Callable[[], int],
    ) -> None:
        self.groups = groups
        self.timers = timers
        self.write = write
        self.emit = emit
        self.answer = answer
        self.fail = fail
        self.now_ms = now_ms

    def apply(self, effects: Effects[T] | None, topics: Iterable[tuple[str, int]] = ()) -> W | None:
        """Carry out ``effects`` and persist ``topics``; what ``write`` returned, or None
        when nothing is to be written (the replies are then answered already)."""
        records: list[Record] = []
        replies: list[tuple[T, object]] = []
        if effects is not None:
            timers = self.timers
            for change in effects.timers:
                if isinstance(change, Schedule):
                    timers.schedule(change.key, change.deadline_ms)
                elif isinstance(change, Cancel):
                    timers.cancel(change.key)
            for event in effects.events:
                self.emit(event)
            records, replies = effects.records, effects.replies
        topics = list(topics)
        if not records and not topics:
            answer = self.answer
            for token, result in replies:
                answer(token, result)
            return None
        return self.write(Batch(records, topics, replies))

    def written(self, batch: Batch[T], error: BaseException | None) -> None:
        """``batch`` is stored (``error`` None) or failed to be: the state machine learns
        it first, then the replies that waited are answered, or failed with ``error``."""
        if batch.records:
            self.apply(self.groups.written(batch.records, error is None, self.now_ms()))
        if error is None:
            answer = self.answer
            for token, result in batch.replies:
                answer(token, result)
        else:
            fail = self.fail
            for token, _result in batch.replies:
                fail(token, error)

    def fire_timer(self, key: str) -> W | None:
        return self.apply(self.groups.fire_timer(key, self.now_ms()))
