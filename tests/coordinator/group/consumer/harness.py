"""Consumer-protocol members (KIP-848) driven against the sans-IO coordinator with a fake
clock: each ``Member`` behaves like a well-behaved client, revoking what its assignment
no longer holds before it reports back."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from coordinator.group import GroupCoordinator
from coordinator.group.consumer.member import Partitions
from coordinator.group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from coordinator.shared.topic_regex import CompiledCache, resolve

from ..harness import GROUP, Harness


@dataclass
class ConsumerHarness(Harness):
    topics: dict[str, int] = field(default_factory=lambda: {"orders": 6})
    #: Unless set, targets are computed when the turn ends (the advance(0) after each
    #: call: an assignment interval of 0), so that every heartbeat is answered before
    #: ``send`` returns; test_coalesce.py sets it to test the interval.
    keep_interval: bool = False

    def __post_init__(self) -> None:
        if not self.keep_interval:
            consumer = replace(self.config.consumer, assignment_interval_ms=0)
            self.config = replace(self.config, consumer=consumer)
        super().__post_init__()
        self.co = GroupCoordinator(
            self.config,
            topic_partitions=lambda t: self.topics.get(t, 0),
            topic_names=lambda: list(self.topics),
        )

    def send(self, req: ConsumerHeartbeatInput) -> ConsumerHeartbeatResult:
        token = self.send_held(req)
        result = self.replies[token]
        assert isinstance(result, ConsumerHeartbeatResult)
        return result

    def send_held(self, req: ConsumerHeartbeatInput) -> int:
        """Send a heartbeat whose answer may wait for the store; returns its token. The
        patterns it needs are resolved first (as the handler does in the regex worker)."""
        pattern = req.subscribed_topic_regex or None
        wanted = self.co.regexes_to_resolve(req.group_id, pattern, self.now)
        if wanted:
            topics = list(self.topics)
            resolved = resolve(CompiledCache(1 << 20), wanted, topics)
            req = replace(req, resolved=resolved, resolved_topics=len(topics))
        token = self._token()
        self.apply(self.co.consumer_group_heartbeat(token, req, self.now))
        # The end of the event-loop turn: a held heartbeat is answered once the group's
        # next target assignment is computed (coalesce.py).
        self.advance(0)
        return token

    def member(self, member_id: str, **kwargs: object) -> Member:
        return Member(self, member_id, **kwargs)  # type: ignore[arg-type]


@dataclass
class Member:
    h: ConsumerHarness
    member_id: str
    topics: list[str] = field(default_factory=lambda: ["orders"])
    instance_id: str | None = None
    group: str = GROUP
    assignor: str | None = None
    regex: str | None = None
    rebalance_timeout_ms: int = 30000
    epoch: int = 0
    owned: Partitions = field(default_factory=dict)
    revoked: list[tuple[str, int]] = field(default_factory=list)
    last: ConsumerHeartbeatResult | None = None

    def join(self) -> ConsumerHeartbeatResult:
        self.epoch = 0
        self.owned = {}
        return self.beat(full=True)

    def beat(self, full: bool = False) -> ConsumerHeartbeatResult:
        """A heartbeat reporting what it owns; applies the answer as a client does."""
        r = self.h.send(self.request(full))
        return self.answered(r)

    def request(self, full: bool = False) -> ConsumerHeartbeatInput:
        """The heartbeat the member sends next."""
        joining = self.epoch == 0
        return ConsumerHeartbeatInput(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms if full or joining else -1,
            subscribed_topic_names=self.topics if full or joining else None,
            subscribed_topic_regex=self.regex if full or joining else None,
            server_assignor=self.assignor if full or joining else None,
            owned={} if joining else dict(self.owned),
        )

    def answered(self, r: ConsumerHeartbeatResult) -> ConsumerHeartbeatResult:
        """Apply an answer as a client does."""
        self.last = r
        if r.error_code == 0:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                for topic, parts in self.owned.items():
                    for p in parts - r.assignment.get(topic, frozenset()):
                        self.revoked.append((topic, p))
                self.owned = dict(r.assignment)
        return r

    def leave(self, epoch: int = -1) -> ConsumerHeartbeatResult:
        r = self.h.send(
            ConsumerHeartbeatInput(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=epoch,
                instance_id=self.instance_id,
            )
        )
        self.owned = {}
        return r

    def partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def owners_disjoint(members: list[Member]) -> bool:
    seen: set[tuple[str, int]] = set()
    for m in members:
        if seen & m.partitions():
            return False
        seen |= m.partitions()
    return True


def settle(members: list[Member], rounds: int = 10) -> None:
    """Heartbeat everyone round-robin (no time passes), checking ownership stays
    disjoint after every answer."""
    for _ in range(rounds):
        for m in members:
            m.beat()
            assert owners_disjoint(members), [sorted(x.partitions()) for x in members]
