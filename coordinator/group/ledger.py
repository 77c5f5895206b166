"""What durability (durability.py) keeps of one group, in one holder per group: what the
store holds of it, its records on the way there, the answers waiting for them, its
deletion in flight, its members' heartbeats as last persisted. Dropping a group's ledger
forgets all of it at once (unload, a rollback to nothing)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .consumer.requests import ConsumerHeartbeatResult
from .offsets_manager import Committed
from .records import GroupDeletedRecord, Record, StoredGroup
from .results import JoinGroupResult, LeaveGroupResult, OffsetFetchResult, SyncGroupResult

#: An answer that may wait for its group's records to be stored.
HeldResult = (
    JoinGroupResult
    | SyncGroupResult
    | OffsetFetchResult
    | ConsumerHeartbeatResult
    | LeaveGroupResult
)


@dataclass(slots=True, eq=False)
class Held:
    """The replies one call gave about one group, waiting for the group's last record in
    flight when they were given (by identity): writes complete in order, so once it is
    stored every earlier one is, and a failed one rolls the group back, failing them
    all. One per call and group, not per reply (a join phase answers every member)."""

    replies: list[tuple[object, HeldResult]]
    waiting: Record


@dataclass(slots=True, eq=False)
class Ledger:
    #: What the store holds of the group: each record replayed once it is stored (what a
    #: failed write rolls the group back to).
    stored: StoredGroup = field(default_factory=StoredGroup)
    #: Its records written but not yet reported stored, oldest first.
    in_flight: deque[Record] = field(default_factory=deque)
    #: Answers waiting for those records, oldest first.
    held: deque[Held] = field(default_factory=deque)
    #: Its deletion in flight, with the offsets it had (back, should it fail).
    deleting: tuple[GroupDeletedRecord, Committed] | None = None
    #: Its members' last heartbeats as last persisted (snapshot or checkpoint).
    checkpointed: dict[str, int] = field(default_factory=dict)

    def idle(self) -> bool:
        """Nothing stored, nothing on the way: the ledger can go."""
        return not (self.stored or self.in_flight or self.held or self.deleting)
