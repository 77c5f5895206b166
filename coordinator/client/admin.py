"""Group administration over the wire, as ``kafka-consumer-groups.sh`` does it: list,
describe and delete groups, read committed offsets, and reset them.

Offsets are reset like Kafka's tool: only while the group is inactive (Empty, or unknown to
the coordinator), by an OffsetCommit with generation -1 and no member id; the coordinator
refuses it (UNKNOWN_MEMBER_ID) if a member joined in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from protocol.apis import ApiKey
from protocol.apis.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseAssignment,
)
from protocol.apis.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.apis.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.apis.list_groups import ListGroupsRequest, ListGroupsResponse
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.consumer import CONSUMER_PROTOCOL_TYPE
from protocol.errors import DecodeError, ErrorCode

from ..assignors import decode_member_assignment, decode_member_subscription
from .errors import KafkaClientError
from .metadata import partition_counts
from .offsets import GroupIdentity, OffsetAndMetadata, commit_offsets, fetch_offsets
from .pool import NO_BOOTSTRAP, Address, BrokerConnection, ConnectionPool, parse_bootstrap

TopicPartition = tuple[str, int]
EARLIEST = -2
LATEST = -1
INACTIVE_STATES = ("Empty", "Dead")
T = TypeVar("T")
#: How long a command keeps looking for a group's coordinator that cannot be reached or
#: says it is not (any more) the coordinator: in a cluster, a dead node's groups go to
#: another node once its lease runs out (6 s by default).
COORDINATOR_WAIT_S = 15.0
RETRY_BACKOFF_S = 0.25
#: Answers that mean "ask FindCoordinator again".
_MOVED = (
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
)


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # ListGroups v4+
    group_type: str | None  # ListGroups v5+


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    #: Decoded from the consumer protocol; None for other protocol types or unreadable bytes.
    assignment: dict[str, list[int]] | None
    topics: list[str] | None
    metadata: bytes
    assignment_bytes: bytes
    #: KIP-848 members (ConsumerGroupDescribe): their epoch and target assignment.
    member_epoch: int | None = None
    target_assignment: dict[str, list[int]] | None = None
    #: The protocol a KIP-848 group's member speaks (``classic`` inside a consumer group,
    #: during an online migration), from ConsumerGroupDescribe v1's MemberType.
    protocol: str | None = None


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The broker (node) that coordinates a group, as FindCoordinator names it."""

    node_id: int | None
    host: str
    port: int

    def __str__(self) -> str:
        where = f"{self.host}:{self.port}"
        return where if self.node_id is None else f"{where} (node {self.node_id})"


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # a KIP-848 group: its server-side assignor
    #: No generation or leader: Kafka's DescribeGroups does not carry them.
    members: list[MemberDescription] = field(default_factory=list)
    #: "classic", or "consumer" (KIP-848) with the group and target assignment epochs.
    group_type: str = "classic"
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    coordinator: Coordinator | None = None


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    metadata: str | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(self.log_end - self.committed, 0)


class GroupNotInactiveError(KafkaClientError):
    """Offsets can only be reset while the group has no members."""


class GroupAdmin:
    def __init__(
        self,
        bootstrap: str | Sequence[str],
        *,
        pool: ConnectionPool | None = None,
        request_timeout_s: float = 30.0,
    ) -> None:
        self.bootstrap: list[Address] = parse_bootstrap(bootstrap)
        self._owns_pool = pool is None
        self.pool = pool or ConnectionPool(client_id="group-coordinator-admin")
        self.timeout = request_timeout_s
        self.coordinator_wait_s = COORDINATOR_WAIT_S
        #: Brokers the last ``list_groups`` could not reach (their groups are missing).
        self.unreachable: list[Address] = []

    async def __aenter__(self) -> GroupAdmin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.close()

    async def _broker(self) -> BrokerConnection:
        return await self.pool.bootstrap(self.bootstrap)

    async def _at_coordinator(
        self, group_id: str, call: Callable[[BrokerConnection], Awaitable[T]]
    ) -> T:
        """``call`` at the group's coordinator. A coordinator that cannot be reached (a node
        just died) or answers that it is not the coordinator (the group moved) is looked up
        again, every RETRY_BACKOFF_S, for up to ``coordinator_wait_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.coordinator_wait_s
        refresh = False
        while True:
            try:
                address = await self.pool.find_coordinator(
                    group_id, self.bootstrap, refresh=refresh
                )
                conn = await self.pool.shared(address)
                return await call(conn)
            except (KafkaClientError, OSError) as exc:
                code = exc.code if isinstance(exc, KafkaClientError) else None
                unreachable = code is None and not str(exc).startswith(NO_BOOTSTRAP)
                if not (code in _MOVED or unreachable) or loop.time() >= deadline:
                    raise
            refresh = True
            await asyncio.sleep(RETRY_BACKOFF_S)

    def _named(self, group_id: str, conn: BrokerConnection) -> Coordinator:
        host, port = conn.address
        return Coordinator(self.pool.coordinator_id(group_id), host, port)

    async def list_groups(self, states: Sequence[str] = ()) -> list[GroupListing]:
        """Every broker's groups, merged: each broker lists only the groups it coordinates
        (in a cluster, its coordinator partitions), as Kafka's admin client asks them all.
        A broker that cannot be reached (a node that just died is listed until its lease
        runs out) is left out and named in ``unreachable``."""
        merged: dict[str, GroupListing] = {}
        self.unreachable = []
        for address in await self._brokers():
            try:
                conn = await self.pool.shared(address)
            except (KafkaClientError, OSError):
                self.unreachable.append(address)
                continue
            for listing in await self._list_groups_at(conn, states):
                merged.setdefault(listing.group_id, listing)
        return sorted(merged.values(), key=lambda g: g.group_id)

    async def _brokers(self) -> list[Address]:
        """The brokers Metadata lists (the bootstrap broker alone if it names none)."""
        conn = await self._broker()
        version = conn.versions.pick(MetadataRequest)
        if version < 1:  # v0 cannot ask for no topics
            return [conn.address]
        resp = await conn.call(MetadataRequest(topics=[]), version, timeout=self.timeout)
        assert isinstance(resp, MetadataResponse)
        return [(b.host, b.port) for b in resp.brokers] or [conn.address]

    async def _list_groups_at(
        self, conn: BrokerConnection, states: Sequence[str]
    ) -> list[GroupListing]:
        version = conn.versions.pick(ListGroupsRequest)
        resp = await conn.call(ListGroupsRequest(states_filter=list(states)), version)
        assert isinstance(resp, ListGroupsResponse)
        if resp.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(resp.error_code, "ListGroups")
        groups = [
            GroupListing(
                g.group_id,
                g.protocol_type,
                g.group_state if version >= 4 else None,
                g.group_type if version >= 5 else None,
            )
            for g in resp.groups
        ]
        if states and version < 4:  # an old broker cannot filter; do it here
            wanted = {s.lower() for s in states}
            groups = [g for g in groups if (g.state or "").lower() in wanted]
        return sorted(groups, key=lambda g: g.group_id)

    async def describe_group(self, group_id: str) -> GroupDescription:
        return await self._at_coordinator(group_id, lambda c: self._describe_at(c, group_id))

    async def _describe_at(self, conn: BrokerConnection, group_id: str) -> GroupDescription:
        resp = await conn.call(DescribeGroupsRequest(groups=[group_id]), timeout=self.timeout)
        assert isinstance(resp, DescribeGroupsResponse)
        [g] = resp.groups
        if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (
            g.error_code == ErrorCode.NONE and g.group_state == "Dead" and not g.members
        ):
            # Not a classic group: perhaps a KIP-848 one (as Kafka's admin client does).
            consumer_group = await self._describe_consumer_group(conn, group_id)
            return consumer_group or GroupDescription(
                group_id, "Dead", "", "", coordinator=self._named(group_id, conn)
            )
        if g.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(g.error_code, f"DescribeGroups({group_id})")
        consumer = g.protocol_type == CONSUMER_PROTOCOL_TYPE
        return GroupDescription(
            group_id=g.group_id,
            state=g.group_state,
            protocol_type=g.protocol_type,
            protocol=g.protocol_data,
            members=[
                MemberDescription(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    host=m.client_host,
                    assignment=_assignment(m.member_assignment) if consumer else None,
                    topics=_topics(m.member_metadata) if consumer else None,
                    metadata=bytes(m.member_metadata),
                    assignment_bytes=bytes(m.member_assignment),
                )
                for m in g.members
            ],
            coordinator=self._named(group_id, conn),
        )

    async def _describe_consumer_group(
        self, conn: BrokerConnection, group_id: str
    ) -> GroupDescription | None:
        """ConsumerGroupDescribe, when the broker serves it; None: not a consumer group."""
        if ApiKey.CONSUMER_GROUP_DESCRIBE not in conn.versions.ranges:
            return None
        request = ConsumerGroupDescribeRequest(group_ids=[group_id])
        resp = await conn.call(request, timeout=self.timeout)
        assert isinstance(resp, ConsumerGroupDescribeResponse)
        [g] = resp.groups
        if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        if g.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(g.error_code, f"ConsumerGroupDescribe({group_id})")

        def by_name(a: ConsumerGroupDescribeResponseAssignment) -> dict[str, list[int]]:
            return {tp.topic_name: sorted(tp.partitions) for tp in a.topic_partitions}

        return GroupDescription(
            group_id=g.group_id,
            state=g.group_state,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol=g.assignor_name,
            members=[
                MemberDescription(
                    member_id=m.member_id,
                    group_instance_id=m.instance_id,
                    client_id=m.client_id,
                    host=m.client_host,
                    assignment=by_name(m.assignment),
                    topics=list(m.subscribed_topic_names),
                    metadata=b"",
                    assignment_bytes=b"",
                    member_epoch=m.member_epoch,
                    target_assignment=by_name(m.target_assignment),
                    protocol={0: "classic", 1: "consumer"}.get(m.member_type),
                )
                for m in g.members
            ],
            group_type="consumer",
            group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch,
            coordinator=self._named(group_id, conn),
        )

    async def delete_group(self, group_id: str) -> None:
        async def delete(conn: BrokerConnection) -> None:
            body = DeleteGroupsRequest(groups_names=[group_id])
            resp = await conn.call(body, timeout=self.timeout)
            assert isinstance(resp, DeleteGroupsResponse)
            [result] = resp.results
            if result.error_code != ErrorCode.NONE:
                raise KafkaClientError.of(result.error_code, f"DeleteGroups({group_id})")

        await self._at_coordinator(group_id, delete)

    async def committed_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return await self._at_coordinator(
            group_id, lambda c: fetch_offsets(c, group_id, partitions, timeout=self.timeout)
        )

    async def list_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        """Offsets at ``timestamp`` (EARLIEST, LATEST or a time in ms); partitions the broker
        reports an error for are left out."""
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(set(partitions)):
            by_topic.setdefault(topic, []).append(p)
        if not by_topic:
            return {}
        conn = await self._broker()
        body = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(
                    name=t,
                    partitions=[
                        ListOffsetsPartition(partition_index=p, timestamp=timestamp) for p in ps
                    ],
                )
                for t, ps in by_topic.items()
            ],
        )
        resp = await conn.call(body, timeout=self.timeout)
        assert isinstance(resp, ListOffsetsResponse)
        return {
            (t.name, p.partition_index): p.offset
            for t in resp.topics
            for p in t.partitions
            if p.error_code == ErrorCode.NONE and p.offset >= 0
        }

    async def group_offsets(self, group_id: str) -> list[PartitionOffsets]:
        """Committed offsets with log-end offsets and lag, like the tool's --describe."""
        committed = await self.committed_offsets(group_id)
        try:
            ends = await self.list_offsets(committed, LATEST)
        except KafkaClientError:
            ends = {}
        return [
            PartitionOffsets(t, p, om.offset, ends.get((t, p)), om.metadata)
            for (t, p), om in sorted(committed.items())
        ]

    async def reset_offsets(
        self, group_id: str, topic: str, *, to_earliest: bool = False, to_offset: int | None = None
    ) -> dict[TopicPartition, int]:
        """Reset every partition of ``topic`` and return the new offsets. A ``to_offset``
        outside a partition's [earliest, latest] range is clamped to it, as Kafka's tool does."""
        if to_earliest == (to_offset is not None):
            raise ValueError("give exactly one of to_earliest and to_offset")
        description = await self.describe_group(group_id)
        if description.state not in INACTIVE_STATES:
            raise GroupNotInactiveError(
                f"offsets of group {group_id!r} can only be reset while it is inactive "
                f"(Empty), but it is {description.state}"
            )
        counts = await partition_counts(await self._broker(), [topic], timeout=self.timeout)
        if topic not in counts:
            raise KafkaClientError(
                f"topic {topic!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        partitions = [(topic, p) for p in range(counts[topic])]
        earliest = await self.list_offsets(partitions, EARLIEST)
        targets: dict[TopicPartition, int] = {}
        if to_earliest:
            targets = {tp: earliest.get(tp, 0) for tp in partitions}
        else:
            assert to_offset is not None
            latest = await self.list_offsets(partitions, LATEST)
            for tp in partitions:
                low, high = earliest.get(tp, 0), latest.get(tp)
                value = max(to_offset, low)
                targets[tp] = value if high is None else min(value, high)
        await self._at_coordinator(
            group_id,
            lambda c: commit_offsets(c, GroupIdentity(group_id), targets, timeout=self.timeout),
        )
        return targets


def _assignment(data: bytes) -> dict[str, list[int]] | None:
    try:
        return decode_member_assignment(data)
    except DecodeError:
        return None


def _topics(data: bytes) -> list[str] | None:
    if not data:
        return None
    try:
        return list(decode_member_subscription(data, None).topics)
    except DecodeError:
        return None
