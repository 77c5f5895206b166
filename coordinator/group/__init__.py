"""The classic group state machine (spec section 4), sans-IO.

``GroupCoordinator`` takes (request or timer, now) and returns ``Effects``: replies for
request tokens, timer changes, records to persist and events to log. It never reads a
clock, touches a socket or sleeps; the server supplies time and carries out the effects.
"""

from .config import GroupConfig
from .coordinator import GroupCoordinator
from .effects import Cancel, Effects, Schedule
from .states import GroupState, IllegalStateTransition

__all__ = [
    "Cancel",
    "Effects",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "IllegalStateTransition",
    "Schedule",
]
