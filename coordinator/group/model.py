"""What every kind of group answers, as Kafka's ``Group`` interface: the classic group
(``classic/group.py``) and the KIP-848 consumer group (``consumer/group.py``) live in one map of
groups and share one offsets manager (``offsets_manager.py``), so offset commits, fetches,
deletions, expiry, DeleteGroups, ListGroups and the group limit ask the group through
this interface instead of branching on its kind.
"""

from __future__ import annotations

from typing import Protocol

from .requests import OffsetCommitInput
from .results import ListedGroup

#: ListGroups v5+ GroupType values (KIP-848).
CLASSIC = "classic"
CONSUMER = "consumer"

#: ``offset_expiry()`` of a group whose offsets do not expire now.
NEVER = (False, None)


class Group(Protocol):
    @property
    def group_id(self) -> str: ...

    @property
    def group_type(self) -> str:
        """``classic`` or ``consumer``."""
        ...

    @property
    def state_name(self) -> str: ...

    def is_empty(self) -> bool:
        """No members: the group may be deleted, converted, or expired with its offsets."""
        ...

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Offsets of a subscribed topic neither expire nor may be deleted."""
        ...

    def validate_offset_commit(self, req: OffsetCommitInput) -> int:
        """An error code, or 0 (the group exists; a commit to an unknown group is the
        offsets manager's to judge)."""
        ...

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int:
        """An error code, or 0."""
        ...

    def validate_offset_delete(self) -> int: ...

    def validate_delete_group(self) -> int: ...

    def offset_expiry(self) -> tuple[bool, int | None]:
        """(whether offsets may expire now, the time they expire from: None means each
        offset from its own commit)."""
        ...

    def listed(self) -> ListedGroup: ...

    @property
    def member_count(self) -> int: ...

    @property
    def generation(self) -> int:
        """The generation of a classic group, the group epoch of a consumer group."""
        ...

    def described_protocol(self) -> tuple[str, str]:
        """(protocol type, protocol) as a reader shows them: a consumer group's protocol is
        its server assignor."""
        ...

    def subscribed_topic_names(self) -> frozenset[str]:
        """The topics its members subscribe to, as far as the group knows them."""
        ...
