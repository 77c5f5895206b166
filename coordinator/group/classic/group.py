"""A classic group's data and the bookkeeping every membership change needs (spec 4.1).

Counters (members with a parked JoinGroup, members supporting each protocol) are updated
on every change, so "has everyone joined?" and "is this protocol supported?" cost O(1) per
request instead of a scan of the members.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from protocol.consumer import CONSUMER_PROTOCOL_TYPE
from protocol.errors import ErrorCode

from ..deadlines import heartbeat_key
from ..model import CLASSIC, NEVER
from ..requests import OffsetCommitInput
from ..results import ListedGroup, MemberMetadata
from .member import Member, Protocols
from .protocol_selection import candidate_protocols, select_protocol
from .states import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    STABLE,
    GroupState,
    can_rebalance,
    check_transition,
)


@dataclass(slots=True, eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = EMPTY
    previous_state: GroupState = EMPTY
    state_timestamp_ms: int | None = None  # when the current state was entered
    rebalance_started_ms: int | None = None  # when the current/last rebalance started
    protocol_type: str | None = None  # fixed by the first member of a memberless group
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_join_members: set[str] = field(default_factory=set)  # KIP-394 ids handed out
    #: Pending ids whose MEMBER_ID_REQUIRED answer waits for a record's write (the call
    #: that created the group wrote one): until it lands, the client has not learnt them.
    unannounced: dict[str, object] = field(default_factory=dict)  # id -> record (identity)
    pending_sync_members: set[str] = field(default_factory=set)
    num_members_awaiting_join: int = 0
    supported_protocols: Counter[str] = field(default_factory=Counter)  # name -> members
    # The join timer (spec 4.5): either the initial delay (with what is left of the first
    # member's rebalance timeout) or the plain rebalance timeout.
    new_member_added: bool = False
    join_timer_is_initial: bool = False
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    # Topics the consumer members subscribe to, computed at each new generation; None when
    # unknown (not a consumer group, or unparsable metadata).
    subscribed_topics: frozenset[str] | None = None

    # -- the Group interface (model.py) -----------------------------------------------------

    group_type = CLASSIC

    @property
    def state_name(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return self.state is EMPTY

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Unknown subscriptions count as "subscribed to everything" for consumer groups."""
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    def validate_offset_commit(self, req: OffsetCommitInput) -> int:
        """Spec 4.4's OffsetCommit checks of a live group."""
        if self.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and self.state is EMPTY:
            return 0  # no member checks for commits into an Empty group
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self.validate_member(req.member_id, req.group_instance_id)
            if error:
                return error
            if req.generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif self.state is not EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if self.state is COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return 0

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int:
        return 0  # classic fetches name no member

    def validate_offset_delete(self) -> int:
        if self.state is DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if self.state is not EMPTY and self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP
        return 0

    def validate_delete_group(self) -> int:
        if self.state is DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return 0 if self.state is EMPTY else ErrorCode.NON_EMPTY_GROUP

    def offset_expiry(self) -> tuple[bool, int | None]:
        """Kafka's ClassicGroup.offsetExpirationCondition."""
        if self.protocol_type is None:
            return True, None  # simple group: each offset from its own commit
        if self.state is EMPTY:
            return True, self.state_timestamp_ms  # from when the group became Empty
        if (
            self.state is STABLE
            and self.protocol_type == CONSUMER_PROTOCOL_TYPE
            and self.subscribed_topics is not None
        ):
            return True, None  # only unsubscribed topics, from their commit
        return NEVER

    def listed(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type or "", self.state.value, CLASSIC)

    # -- state ---------------------------------------------------------------------------

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def generation(self) -> int:
        return self.generation_id

    def described_protocol(self) -> tuple[str, str]:
        return self.protocol_type or "", self.protocol_name or ""

    def subscribed_topic_names(self) -> frozenset[str]:
        return self.subscribed_topics or frozenset()

    def transition(self, target: GroupState, now_ms: int) -> GroupState:
        """The only place the state changes; returns the previous state."""
        check_transition(self.group_id, self.state, target)
        old = self.state
        self.previous_state = old
        self.state = target
        self.state_timestamp_ms = now_ms
        return old

    def can_rebalance(self) -> bool:
        return can_rebalance(self.state)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    # -- membership -------------------------------------------------------------------------

    def new_member(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
    ) -> Member:
        return Member(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            heartbeat_key=heartbeat_key(self.group_id, member_id),
        )

    def add(self, member: Member, join_token: object | None = None) -> None:
        instance = member.group_instance_id
        if member.member_id in self.members:
            raise ValueError(f"member {member.member_id} is already in {self.group_id}")
        if instance is not None:
            if instance in self.static_members:
                raise ValueError(f"static member {instance} is already in {self.group_id}")
            self.static_members[instance] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names)
        member.join_token = join_token
        if join_token is not None:
            self.num_members_awaiting_join += 1
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_join_members.discard(member.member_id)
        self.unannounced.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Forget a member (or a pending id). Parked tokens are the caller's to answer."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names)
            if member.join_token is not None:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            # Any remaining member; a leader without a parked join is replaced at completion.
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.unannounced.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        return member

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member of {self.group_id}")
        self.pending_join_members.add(member_id)

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join_token: object | None,
    ) -> object | None:
        """A rejoin: new protocols and timeouts, and its JoinGroup parked. Returns a JoinGroup
        this one supersedes (the caller must answer it)."""
        self.supported_protocols.subtract(member.protocol_names)
        member.set_protocols(protocols)
        self.supported_protocols.update(member.protocol_names)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        superseded = self.take_join(member)
        member.join_token = join_token
        if join_token is not None:
            self.num_members_awaiting_join += 1
        return superseded

    def take_join(self, member: Member) -> object | None:
        """Unpark the member's JoinGroup, to answer it."""
        token = member.join_token
        if token is not None:
            member.join_token = None
            self.num_members_awaiting_join -= 1
        return token

    def replace_static_member(
        self, instance_id: str, old_id: str, new_id: str
    ) -> tuple[Member, object | None, object | None]:
        """KIP-345: re-key the instance's member to ``new_id``, keeping its assignment and
        leadership. Returns it with the old id's parked JoinGroup and SyncGroup, which the
        caller fences."""
        member = self.members.pop(old_id)
        old_join = self.take_join(member)
        old_sync, member.sync_token = member.sync_token, None
        member.member_id = new_id
        member.heartbeat_key = heartbeat_key(self.group_id, new_id)
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member, old_join, old_sync

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        """Spec 4.4's member checks: an unknown instance 25, an instance held by another
        member id 82, an unknown member 25; 0 if valid."""
        if group_instance_id is not None:
            owner = self.static_members.get(group_instance_id)
            if owner is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if owner != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return 0

    def has_all_members_joined(self) -> bool:
        return self.num_members_awaiting_join == len(self.members) and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest of its members'."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else promote any member that did. False if there is
        no leader or nobody rejoined (then the old leader id is kept, as in Kafka)."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is None:
            return False
        if leader.join_token is not None:
            return True
        for member in self.members.values():
            if member.join_token is not None:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols (spec 4.4 "protocols supported", 4.11) -----------------------------------

    def supports_protocols(self, protocol_type: str, names: Protocols) -> bool:
        if self.state is EMPTY:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        size = len(self.members)
        return any(self.supported_protocols[name] == size for name, _ in names)

    def select_protocol(self) -> str | None:
        candidates = candidate_protocols(self.supported_protocols, len(self.members))
        return select_protocol(self.members.values(), candidates)

    def current_members_list(self) -> list[MemberMetadata]:
        """What the leader's JoinGroup response lists: every member's metadata for the
        selected protocol."""
        name = self.protocol_name
        return [
            MemberMetadata(m.member_id, m.group_instance_id, m.metadata_for(name))
            for m in self.members.values()
        ]
