"""What a handler returns: its reply and what must happen for it, as data.

Handlers are sans-IO. They never wait, sleep, write or start threads; they say what they
need in an ``Outcome`` and the runtime (``coordinator/shell/runtime.py``) carries it out:

- ``effects``: the state machine's output (records to persist, timer changes, events and
  the replies of parked requests), and ``topics`` to persist for the catalog;
- ``reply``: the response body, sent once everything the outcome writes is durable; or a
  ``Wait`` for a reply that is not ready yet.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from protocol.errors import ErrorCode

from ..group.effects import Effects
from ..group.events import GroupEvent
from ..group.frozen import frozen

R = TypeVar("R")
T = TypeVar("T")


class Pending:
    """The token a state-machine call is answered through: its result is set when the
    Effects that carry it are carried out (after their records are durable)."""

    __slots__ = ("on_answer", "result")

    _UNSET: Any = object()

    def __init__(self) -> None:
        self.result: Any = Pending._UNSET
        #: Called once with the result, or with the exception when the write failed.
        self.on_answer: Callable[[Any, BaseException | None], None] | None = None

    @property
    def answered(self) -> bool:
        return self.result is not Pending._UNSET

    def resolve(self, result: Any) -> None:
        self.result = result
        on_answer, self.on_answer = self.on_answer, None
        if on_answer is not None:
            on_answer(result, None)

    def fail(self, exc: BaseException) -> None:
        self.result = None
        # Dropped once called: the callback usually holds what holds this token (a cycle
        # that would outlive the reply until a full garbage collection).
        on_answer, self.on_answer = self.on_answer, None
        if on_answer is not None:
            on_answer(None, exc)


class CloseConnection(Exception):
    """Close the connection instead of answering: how Kafka tells a client that expects
    no answer (a Produce with acks=0) that its request failed."""


@frozen
class Awaiting(Generic[R]):
    """The reply is ``render(result)`` once the state machine answers ``token`` (at once,
    or later: a parked JoinGroup or SyncGroup)."""

    token: Pending
    render: Callable[[Any], R]
    #: The answer when what the token waits for could not be stored (None: close).
    failed: Callable[[ErrorCode], R] | None = None


@frozen
class Delayed(Generic[R]):
    """Reply ``body`` after ``delay_ms`` (a Fetch long poll, a refused login); at once if
    the node shuts down first."""

    delay_ms: int
    body: R
    #: Answered at once when the client sends another request on the connection (a long
    #: poll with nothing to wait for: the next request must not queue behind it).
    until_next_request: bool = False


@frozen
class Offloaded(Generic[R, T]):
    """Run ``work`` off the event loop (it blocks: a password's key derivation), then
    ``then(its result)`` on the loop, which gives the outcome to carry out."""

    work: Callable[[], T]
    then: Callable[[T], Outcome[R]]
    #: Where to run it (None: the loop's default executor, shared with password checks).
    executor: Executor | None = None


Wait = Awaiting[R] | Delayed[R] | Offloaded[R, Any]


@dataclass(slots=True)
class Outcome(Generic[R]):
    reply: R | Wait[R]
    effects: Effects[Pending] | None = None
    #: Topics created by this request, (name, partitions): persisted before the reply.
    topics: list[tuple[str, int]] = field(default_factory=list)
    #: The answer when the writes could not be stored (None: the connection closes).
    failed: Callable[[ErrorCode], R] | None = None

    def emit(self, event: GroupEvent) -> None:
        if self.effects is None:
            self.effects = Effects()
        self.effects.events.append(event)


def answer_in(effects: Effects[Pending], token: Pending, kind: type[T]) -> T:
    """The result the state machine gave ``token`` in ``effects`` (a call it answers at
    once, which the runtime still holds back until its records are durable)."""
    for answered, result in effects.replies:
        if answered is token and isinstance(result, kind):
            return result
    raise LookupError(f"no {kind.__name__} for this token")


def call(
    effects: Effects[Pending],
    token: Pending,
    render: Callable[[Any], R],
    failed: Callable[[ErrorCode], R] | None = None,
) -> Outcome[R]:
    """The outcome of a state-machine call answered through ``token`` (the runtime renders
    at once when carrying out ``effects`` answers it without a write); ``failed`` answers
    with an error code when the write it waits for fails."""
    return Outcome(Awaiting(token, render, failed), effects)
