"""A consumer group (KIP-848): epochs, members, target assignment and partition owners."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from protocol.consumer import CONSUMER_PROTOCOL_TYPE
from protocol.errors import ErrorCode

from ..model import CONSUMER
from ..requests import OffsetCommitInput
from ..results import ListedGroup
from .config import DEFAULT_ASSIGNOR
from .member import ConsumerMember, MemberState, Partitions

#: Members of consumer groups commit with OffsetCommit v9+ (which carries the member epoch).
MEMBER_COMMIT_VERSION = 9


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"  # the group epoch is ahead of the target assignment's
    RECONCILING = "Reconciling"  # some member has not reached the target assignment yet
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class WaitingHeartbeat:
    """A heartbeat waiting for the group's next target assignment (coalesce.py)."""

    token: object
    member_id: str
    owned: Partitions | None
    full: bool  # whether the answer carries the assignment even if unchanged
    before: Partitions  # the member's assignment when the request came


@dataclass(slots=True, eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    #: The epoch of the target assignment (Kafka's targetAssignmentEpoch).
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    #: The target assignment, by member id.
    target: dict[str, Partitions] = field(default_factory=dict)
    #: Who owns each partition (assigned or pending revocation) and at which member epoch.
    owners: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    #: Partition counts of the subscribed topics that exist (Kafka's subscription metadata).
    subscription_metadata: dict[str, int] = field(default_factory=dict)
    # What the current call changed, written when it ends (durability.py): the group's own
    # fields, members changed or added, members removed.
    dirty: bool = False
    dirty_members: set[str] = field(default_factory=set)
    removed_members: set[str] = field(default_factory=set)
    #: The state last reported in a StateChanged event (computed only after a change).
    reported_state: ConsumerGroupState = ConsumerGroupState.EMPTY
    #: How many members subscribe to each topic (kept, so a heartbeat need not scan).
    topic_subscribers: Counter[str] = field(default_factory=Counter)
    #: The topics each subscribed regular expression matches, and how many topics there
    #: were when they were resolved (topics are only ever added).
    resolved: dict[str, frozenset[str]] = field(default_factory=dict)
    resolved_with_topics: int = -1
    resolved_at_ms: int = -1  # when they were last all resolved
    #: When the current target assignment was computed here (None: before a load), for
    #: the time members take to reconcile to it; not stored.
    target_computed_ms: int | None = None
    #: How many members are reconciled to the target assignment (kept, so that the state
    #: needs no scan of the members), and how many ask for each server assignor.
    reconciled: int = 0
    assignors: Counter[str] = field(default_factory=Counter)
    #: Members added, removed or resubscribed since the last target assignment, and the
    #: assignor's own state carried between computations (uniform_state.py; not stored).
    target_changes: dict[str, None] = field(default_factory=dict)
    target_state: object | None = None
    #: Heartbeats waiting for the next target assignment, since when, and the group epoch
    #: the assignment timer last saw (coalesce.py; not stored).
    held: list[WaitingHeartbeat] = field(default_factory=list)
    held_since_ms: int = 0
    held_epoch: int = 0

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if self.reconciled < len(self.members):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topics(self) -> frozenset[str]:
        return frozenset(t for t, n in self.topic_subscribers.items() if n > 0)

    def member_topics(self, m: ConsumerMember) -> frozenset[str]:
        """The topics the member subscribes to: by name, and those its regex matches."""
        names = frozenset(m.subscribed_topic_names)
        if m.subscribed_topic_regex is None:
            return names
        return names | self.resolved.get(m.subscribed_topic_regex, frozenset())

    def subscribe(self, m: ConsumerMember, names: tuple[str, ...], regex: str | None) -> None:
        """Set a member's subscription (its regex resolved first), keeping the counts."""
        known = m.member_id in self.members
        if known:
            self.topic_subscribers.subtract(self.member_topics(m))
        m.subscribed_topic_names, m.subscribed_topic_regex = names, regex
        if known:
            self.topic_subscribers.update(self.member_topics(m))
            self.target_changes[m.member_id] = None
        self.dirty_members.add(m.member_id)

    def regexes(self) -> set[str]:
        return {r for m in self.members.values() if (r := m.subscribed_topic_regex) is not None}

    def recount(self) -> None:
        """Count the subscribers again (after the regexes were resolved anew)."""
        self.topic_subscribers = Counter()
        for m in self.members.values():
            self.topic_subscribers.update(self.member_topics(m))
        self.target_state = None  # whose subscriptions changed is not known: start afresh

    def touch(self, m: ConsumerMember) -> None:
        """The member changed: its record is written when the call ends."""
        self.dirty_members.add(m.member_id)

    @property
    def changed(self) -> bool:
        return self.dirty or bool(self.dirty_members) or bool(self.removed_members)

    def partition_epoch(self, topic: str, partition: int) -> int:
        """The epoch of the member owning the partition; -1 when nobody does."""
        owner = self.owners.get((topic, partition))
        return -1 if owner is None else owner[1]

    def release(self, m: ConsumerMember) -> None:
        for tp in m.owned_partitions():
            if self.owners.get(tp, ("",))[0] == m.member_id:
                del self.owners[tp]

    def claim(self, m: ConsumerMember) -> None:
        for tp in m.owned_partitions():
            self.owners[tp] = (m.member_id, m.member_epoch)

    def add(self, m: ConsumerMember) -> None:
        self.members[m.member_id] = m
        self.topic_subscribers.update(self.member_topics(m))
        self.dirty_members.add(m.member_id)
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        self.claim(m)
        self.reconciled += m.is_reconciled_to(self.assignment_epoch)
        if m.server_assignor:
            self.assignors[m.server_assignor] += 1
        self.target_changes[m.member_id] = None

    def remove(self, member_id: str) -> ConsumerMember | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        self.release(m)
        self.reconciled -= m.is_reconciled_to(self.assignment_epoch)
        if m.server_assignor:
            self.assignors[m.server_assignor] -= 1
        self.target_changes[member_id] = None
        self.topic_subscribers.subtract(self.member_topics(m))
        self.target.pop(member_id, None)
        self.dirty_members.discard(member_id)
        self.removed_members.add(member_id)
        if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        return m

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def set_assignor(self, m: ConsumerMember, name: str) -> None:
        if m.member_id in self.members and m.server_assignor:
            self.assignors[m.server_assignor] -= 1
        m.server_assignor = name
        if m.member_id in self.members and name:
            self.assignors[name] += 1

    def preferred_assignor(self, default: str) -> str:
        """Kafka's computePreferredServerAssignor: the one most members ask for."""
        counts = {name: n for name, n in self.assignors.items() if n > 0}
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])

    # -- the Group interface (model.py), as Kafka's ConsumerGroup -----------------------------

    group_type = CONSUMER

    @property
    def state_name(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return not self.members

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.topic_subscribers.get(topic, 0) > 0

    def validate_offset_commit(self, req: OffsetCommitInput) -> int:
        # Epoch -1: an admin client or a consumer outside group management; fine when empty.
        if req.generation_id < 0 and not self.members:
            return 0
        m = self.members.get(req.member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if req.api_version < MEMBER_COMMIT_VERSION:
            return ErrorCode.UNSUPPORTED_VERSION
        if req.generation_id > m.member_epoch:
            return _epoch_refused(m)
        return 0  # an older epoch: judged per partition (commit_partition_check)

    def commit_partition_check(self, req: OffsetCommitInput) -> Callable[[str, int], int] | None:
        """KIP-1251 (Kafka 4.3): a commit at an older epoch than the member's (sent before
        it moved on) is taken for each partition the member still holds (assigned or being
        revoked) and got at that epoch or before; any other partition is refused
        (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a member speaking the classic protocol,
        whose generation is its member epoch). None when every partition is taken (the
        epoch is current, or no member commits)."""
        m = self.members.get(req.member_id)
        if m is None or req.generation_id >= m.member_epoch:
            return None
        epoch, refused = req.generation_id, _epoch_refused(m)

        def check(topic: str, partition: int) -> int:
            got = m.assignment_epoch(topic, partition)
            return 0 if got is not None and got <= epoch else refused

        return check

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+ may name a member: it must be one, at its current epoch."""
        if member_id is None and member_epoch < 0:
            return 0
        m = self.members.get(member_id or "")
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != m.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return 0

    def validate_offset_delete(self) -> int:
        return 0  # subscribed topics are refused per partition

    def validate_delete_group(self) -> int:
        return ErrorCode.NON_EMPTY_GROUP if self.members else 0

    def offset_expiry(self) -> tuple[bool, int | None]:
        """Kafka's ConsumerGroup: each offset from its own commit (subscribed topics are
        kept by ``is_subscribed_to_topic``)."""
        return True, None

    def listed(self) -> ListedGroup:
        return ListedGroup(self.group_id, CONSUMER, self.state.value, CONSUMER)

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def generation(self) -> int:
        return self.group_epoch

    def described_protocol(self) -> tuple[str, str]:
        return CONSUMER_PROTOCOL_TYPE, self.preferred_assignor(
            DEFAULT_ASSIGNOR
        ) if self.members else ""

    def subscribed_topic_names(self) -> frozenset[str]:
        return self.subscribed_topics()

    def move(self, m: ConsumerMember, state: MemberState, epoch: int) -> None:
        """Set a member's state and epoch, keeping the count of reconciled members."""
        was = m.is_reconciled_to(self.assignment_epoch)
        if epoch != m.member_epoch:
            m.previous_member_epoch = m.member_epoch
            m.member_epoch = epoch
        m.state = state
        self.reconciled += m.is_reconciled_to(self.assignment_epoch) - was

    def new_target_epoch(self, epoch: int) -> None:
        """A new target assignment: no member has reached its epoch yet."""
        self.assignment_epoch = epoch
        self.reconciled = 0
        self.target_changes.clear()

    def unreconciled(self) -> int:
        return len(self.members) - self.reconciled


def _epoch_refused(m: ConsumerMember) -> int:
    """A commit's epoch refused: the classic protocol has no STALE_MEMBER_EPOCH (Kafka's
    validateMemberEpoch)."""
    return ErrorCode.ILLEGAL_GENERATION if m.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
