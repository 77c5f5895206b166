"""What a handler returns: a response now, or a Deferred one (parked Join/Sync, Fetch poll)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.schema import Struct

if TYPE_CHECKING:
    from ..broker import Broker


class Deferred:
    """A response that is not ready yet: ``future`` resolves to a value ``render`` turns
    into the response body."""

    __slots__ = ("future", "render")

    def __init__(self, future: asyncio.Future[Any], render: Callable[[Any], Struct]) -> None:
        self.future = future
        self.render = render

    @classmethod
    def after(cls, b: Broker, delay_s: float, response: Struct) -> Deferred:
        future: asyncio.Future[Any] = b.loop.create_future()
        handle = b.loop.call_later(delay_s, _resolve, future, response)
        b.track_delayed(future, handle, response)
        return cls(future, _identity)


def _identity(value: Any) -> Struct:
    assert isinstance(value, Struct)
    return value


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


Reply = Struct | Deferred


class Pending:
    """The token a state-machine call is answered through (see Broker.apply)."""

    __slots__ = ("future", "result")

    _UNSET: Any = object()

    def __init__(self) -> None:
        self.result: Any = Pending._UNSET
        self.future: asyncio.Future[Any] | None = None

    @property
    def answered(self) -> bool:
        return self.result is not Pending._UNSET

    def fail(self, exc: BaseException) -> None:
        self.result = None
        if self.future is not None and not self.future.done():
            self.future.set_exception(exc)

    def resolve(self, result: Any) -> None:
        self.result = result
        if self.future is not None and not self.future.done():
            self.future.set_result(result)
