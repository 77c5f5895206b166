"""The group coordinator's state machine, sans-IO (Kafka's group-coordinator module):
classic groups (``classic/``, spec section 4) and KIP-848 consumer groups (``consumer/``)
side by side in one map of groups behind one ``Group`` interface (``model``), their
offsets in one offsets manager (``offsets_manager``).

``GroupCoordinator`` (``coordinator``, the facade) takes (request or timer, now) and
returns ``Effects``: replies for request tokens, timer changes, records to persist and
events to log. It never reads a clock, touches a socket or sleeps; the server supplies
time and carries out the effects.

Every change that must survive is a record (``records``: its fields, and how it replays
into what the store holds of its group). ``lifecycle`` loads groups by replaying stored
records and unloads them; ``durability`` holds answers until their records are stored
and rolls a group back to what is stored when a write fails, with each group's
``ledger``; ``handover`` is what goes with a group to the next coordinator when a live
node gives it up; ``migration`` converts a group between the protocols (the facade gives
it to the consumer heartbeat).

Shared pieces: ``offsets`` (commit, fetch, delete, expiry for every kind), ``admin``
(describe, list, delete), ``context`` (the shard kept between calls and the per-call
``Context``), ``deadlines`` (timer keys), and the data types in ``requests``,
``results``, ``events``, ``effects``, ``config``, ``frozen``.
"""

from .classic.states import GroupState, IllegalStateTransition
from .config import GroupConfig
from .coordinator import GroupCoordinator
from .effects import Cancel, Effects, Schedule, TimerChange

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
