"""A member of a classic group (spec 4.1)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_token: object | None = None  # a parked JoinGroup
    sync_token: object | None = None  # a parked SyncGroup
    is_new: bool = True
    last_heartbeat_wall_ms: int = 0
    protocol_names: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        self.protocol_names = frozenset(name for name, _ in self.protocols)

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def first_supported(self, candidates: set[str]) -> str | None:
        """This member's vote: its most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        return None
