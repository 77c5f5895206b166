"""A classic group's data and the bookkeeping every membership change needs (spec 4.1, 4.11).

The counters (members with a parked JoinGroup, per-protocol support) are kept up to date
on every change so that "has everyone joined?" and protocol checks are O(1) per request.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .member import Member
from .states import GroupState, check_transition


@dataclass(slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None


@dataclass(slots=True, eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_join: set[str] = field(default_factory=set)  # KIP-394 ids handed out, not yet used
    pending_sync: set[str] = field(default_factory=set)
    awaiting_join: int = 0  # members with a parked JoinGroup
    protocol_support: Counter[str] = field(default_factory=Counter)
    new_member_added: bool = False
    # Initial-rebalance delay bookkeeping (spec 4.5).
    join_delay_ms: int = 0
    join_remaining_ms: int = 0
    join_initial: bool = False
    sync_generation: int = -1
    empty_since_wall_ms: int | None = None
    offsets: dict[tuple[str, int], OffsetEntry] = field(default_factory=dict)

    # -- state --------------------------------------------------------------------------

    def transition(self, target: GroupState) -> GroupState:
        check_transition(self.group_id, self.state, target)
        old = self.state
        self.previous_state = old
        self.state = target
        return old

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # -- membership ---------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if member.member_id in self.members:
            raise ValueError(f"member {member.member_id} already in {self.group_id}")
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.protocol_support.update(member.protocol_names)
        if member.join_token is not None:
            self.awaiting_join += 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        if self.state is GroupState.PREPARING_REBALANCE and self.previous_state is GroupState.EMPTY:
            self.new_member_added = True

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.protocol_support.subtract(member.protocol_names)
        if member.join_token is not None:
            self.awaiting_join -= 1
        if member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            # Any remaining member; a leader without a parked join is replaced at completion.
            self.leader_id = next(iter(self.members), None)
        return member

    def update_protocols(self, member: Member, protocols: list[tuple[str, bytes]]) -> None:
        self.protocol_support.subtract(member.protocol_names)
        member.protocols = protocols
        member.protocol_names = frozenset(name for name, _ in protocols)
        self.protocol_support.update(member.protocol_names)

    def rekey(self, member: Member, new_id: str) -> str:
        """Give ``member`` a new id (static member replacement); returns the old one."""
        old_id = member.member_id
        del self.members[old_id]
        member.member_id = new_id
        self.members[new_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return old_id

    def park_join(self, member: Member, token: object) -> object | None:
        """Park ``token`` as the member's JoinGroup; returns a token it replaces, if any."""
        previous = member.join_token
        if previous is None:
            self.awaiting_join += 1
        member.join_token = token
        return previous

    def take_join(self, member: Member) -> object | None:
        token = member.join_token
        if token is not None:
            member.join_token = None
            self.awaiting_join -= 1
        return token

    def all_joined(self) -> bool:
        return self.awaiting_join == len(self.members) and not self.pending_join

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest of its members'."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols (spec 4.4, 4.11) -------------------------------------------------------

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        size = len(self.members)
        return any(self.protocol_support[name] == size for name in names)

    def select_protocol(self) -> str | None:
        """Most voted among protocols every member supports; ties go to the protocol the
        leader (else the first member) prefers most, which makes the choice deterministic."""
        size = len(self.members)
        candidates = {name for name, count in self.protocol_support.items() if count == size}
        if not candidates:
            return None
        votes: Counter[str] = Counter()
        for member in self.members.values():
            vote = member.first_supported(candidates)
            if vote is not None:
                votes[vote] += 1
        best = max(votes.values())
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        top = {name for name, count in votes.items() if count == best}
        return leader.first_supported(top) or min(top)

    def current_members_list(self) -> list[tuple[str, str | None, bytes]]:
        return [
            (m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        ]
