"""A member of a classic group (spec 4.1)."""

from __future__ import annotations

from dataclasses import dataclass, field

Protocols = list[tuple[str, bytes]]


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols  # in the member's order of preference
    heartbeat_key: str  # its session timer (deadlines.heartbeat_key)
    assignment: bytes = b""
    join_token: object | None = None  # a parked JoinGroup
    sync_token: object | None = None  # a parked SyncGroup
    is_new: bool = False  # added by JoinGroup and not yet through a join completion
    #: Joined with no member id (JoinGroup v0-3): it learns its id from the JoinGroup answer.
    id_untold: bool = False
    last_heartbeat_ms: int = 0  # persisted, so a reload grants only the remaining session
    protocol_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.protocol_names = frozenset(name for name, _ in self.protocols)

    def set_protocols(self, protocols: Protocols) -> None:
        self.protocols = protocols
        self.protocol_names = frozenset(name for name, _ in protocols)

    def matches(self, protocols: Protocols) -> bool:
        """Same names in the same order with identical metadata (spec 4.11)."""
        return self.protocols == protocols

    def metadata_for(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str | None:
        """Its most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        return None

    def has_satisfied_heartbeat(self) -> bool:
        # A member waiting for a join/sync answer cannot heartbeat on that connection, so it
        # counts as alive; new members do not get that grace (spec 4.10).
        if self.is_new:
            return False
        return self.join_token is not None or self.sync_token is not None
