"""The group coordinator's state machine, sans-IO: classic groups (spec section 4) and
KIP-848 consumer groups (``consumer/``) side by side in one map of groups behind one
``Group`` interface (``model``), their offsets in one offsets manager
(``offsets_manager``), as Kafka's group-coordinator module has them.

``GroupCoordinator`` takes (request or timer, now) and returns ``Effects``: replies for
request tokens, timer changes, records to persist and events to log. It never reads a
clock, touches a socket or sleeps; the server supplies time and carries out the effects.

Modules: ``coordinator`` (the facade), ``join``/``sync``/``membership``/``offsets``/
``admin`` (one per request family), ``rebalance`` (join phase, assignment, phase timers),
``lifecycle`` (load/unload), ``handover`` (what goes with a group to the next coordinator
when a live node gives it up), ``group``/``member`` (the classic group's data and counters),
``model`` (the Group interface), ``offsets_manager`` (every group's offsets), ``states`` (the
transition table), ``protocol_selection``, ``subscriptions``, ``deadlines`` (timer keys),
``context`` (per-call plumbing), and the data types in ``requests``, ``results``,
``records``, ``events``, ``effects``, ``config``.
"""

from .config import GroupConfig
from .coordinator import GroupCoordinator
from .effects import Cancel, Effects, Schedule, TimerChange
from .states import GroupState, IllegalStateTransition

__all__ = [
    "Cancel",
    "Effects",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "IllegalStateTransition",
    "Schedule",
    "TimerChange",
]
