"""``@frozen``: an immutable value type to the type checker, a plain slotted dataclass at
run time.

The state machine's inputs, results, records and events are values: nothing may change
one once made, and mypy holds every module to that (``frozen_default``, PEP 681). Run-time
freezing is left out because of its price: a frozen dataclass sets each field through
``object.__setattr__``, four times the cost of a plain slot store, and a rebalance of
5,000 members makes some 80,000 of them (measured: ~10% of the daemon's CPU). Hashing and
equality are those of a frozen dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T]) -> type[T]:
    return dataclass(slots=True, unsafe_hash=True)(cls)
