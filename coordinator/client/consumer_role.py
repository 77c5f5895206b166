"""What a member of protocol type ``consumer`` adds to the group protocol, as Kafka's
ConsumerCoordinator does it: subscriptions per assignor, the leader's assignment, and the
rebalance callbacks.

Callbacks (sync or async) get a frozenset of (topic, partition):

* eager assignors: everything owned is revoked before each JoinGroup, the new assignment
  is assigned after SyncGroup;
* cooperative (only when every configured assignor supports it, KIP-429): partitions are
  kept across the rebalance; after SyncGroup the ones no longer assigned are revoked, the
  new ones assigned, and if anything was revoked the member rejoins at once so the leader
  can hand those partitions over;
* lost: the member was dropped (unknown member id, illegal generation, fenced), so what it
  owned may already belong to someone else; nothing is committed for them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from protocol.apis.join_group import JoinGroupResponseMember
from protocol.errors import DecodeError

from ..assignors import (
    ASSIGNORS,
    Assignor,
    RebalanceProtocol,
    Subscription,
    assignment_bytes,
    decode_member_assignment,
    decode_member_subscription,
    subscription_bytes,
)

TopicPartition = tuple[str, int]
PartitionsCallback = Callable[[frozenset[TopicPartition]], Awaitable[Any] | Any]


async def _call(callback: PartitionsCallback | None, partitions: set[TopicPartition]) -> None:
    if callback is None:
        return
    result = callback(frozenset(partitions))
    if inspect.isawaitable(result):
        await result


def _flatten(assignment: Mapping[str, Sequence[int]]) -> set[TopicPartition]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def _group(partitions: set[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        out.setdefault(t, []).append(p)
    return out


class ConsumerRole:
    def __init__(
        self,
        assignor_names: Sequence[str],
        topics: Sequence[str],
        *,
        rack_id: str | None = None,
        assignors: Mapping[str, Assignor] | None = None,
        on_partitions_revoked: PartitionsCallback | None = None,
        on_partitions_assigned: PartitionsCallback | None = None,
        on_partitions_lost: PartitionsCallback | None = None,
    ) -> None:
        known = assignors or ASSIGNORS
        unknown = [n for n in assignor_names if n not in known]
        if unknown or not assignor_names:
            raise ValueError(f"unknown assignors {unknown}; known: {sorted(known)}")
        self.assignors = [known[n] for n in assignor_names]
        # Kafka picks the newest protocol every configured assignor supports.
        common = set.intersection(*(set(a.rebalance_protocols) for a in self.assignors))
        self.protocol = max(common) if common else RebalanceProtocol.EAGER
        self.topics = sorted(set(topics))
        self.rack_id = rack_id
        self.owned: set[TopicPartition] = set()
        self.last_assignment: dict[str, list[int]] | None = None
        self.last_generation = -1
        self.on_partitions_revoked = on_partitions_revoked
        self.on_partitions_assigned = on_partitions_assigned
        self.on_partitions_lost = on_partitions_lost

    def protocols(self, generation_id: int) -> list[tuple[str, bytes]]:
        """JoinGroup protocols, most preferred first."""
        # User data comes from the last assignment (the sticky assignor's survives an eager
        # revocation that emptied `owned`), OwnedPartitions from what is owned now.
        return [
            (
                assignor.name,
                subscription_bytes(
                    assignor,
                    self.topics,
                    owned=_group(self.owned),
                    generation_id=generation_id,
                    rack_id=self.rack_id,
                    last_assignment=self.last_assignment,
                    last_generation=self.last_generation,
                ),
            )
            for assignor in self.assignors
        ]

    async def prepare_join(self, generation_valid: bool) -> None:
        if not generation_valid:
            await self.lose()
        elif self.protocol == RebalanceProtocol.EAGER and self.owned:
            revoked, self.owned = self.owned, set()
            await _call(self.on_partitions_revoked, revoked)

    async def lose(self) -> None:
        if self.owned:
            lost, self.owned = self.owned, set()
            await _call(self.on_partitions_lost, lost)

    async def prepare_leave(self, generation_valid: bool) -> None:
        if not generation_valid:
            await self.lose()
        elif self.owned:
            revoked, self.owned = self.owned, set()
            await _call(self.on_partitions_revoked, revoked)

    def assign(
        self,
        protocol_name: str,
        members: Sequence[JoinGroupResponseMember],
        partition_counts: Mapping[str, int],
    ) -> dict[str, bytes]:
        """The leader's SyncGroup assignments, one for every member."""
        assignor = next(a for a in self.assignors if a.name == protocol_name)
        subscriptions = {m.member_id: self._subscription(m) for m in members}
        result = assignor.assign(subscriptions, partition_counts)
        return {m: assignment_bytes(result.get(m, {})) for m in subscriptions}

    @staticmethod
    def _subscription(member: JoinGroupResponseMember) -> Subscription:
        try:
            return decode_member_subscription(member.metadata, member.group_instance_id)
        except DecodeError:
            # A member whose metadata we cannot read still needs an (empty) assignment.
            return Subscription(topics=[], group_instance_id=member.group_instance_id)

    def subscribed_topics(self, members: Sequence[JoinGroupResponseMember]) -> set[str]:
        return {t for m in members for t in self._subscription(m).topics}

    async def complete(self, data: bytes, generation_id: int) -> bool:
        """Apply a SyncGroup assignment; True if the member must rejoin (cooperative
        revocation)."""
        assignment = decode_member_assignment(data)
        new = _flatten(assignment)
        self.last_assignment = assignment
        self.last_generation = generation_id
        if self.protocol == RebalanceProtocol.EAGER:
            self.owned = new
            await _call(self.on_partitions_assigned, new)
            return False
        revoked, added = self.owned - new, new - self.owned
        if revoked:
            await _call(self.on_partitions_revoked, revoked)
        self.owned = new
        await _call(self.on_partitions_assigned, added)
        return bool(revoked)
