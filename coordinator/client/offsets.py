"""OffsetCommit and OffsetFetch across versions, for members and for the admin client."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from protocol.errors import ErrorCode

from .errors import CommitFailedError, KafkaClientError
from .pool import BrokerConnection

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class GroupIdentity:
    """Who commits: a member (generation, member id, instance id) or, for admin commits to
    an Empty group, nobody (generation -1, member id "")."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        out.setdefault(topic, []).append(p)
    return out


async def commit_offsets(
    conn: BrokerConnection,
    who: GroupIdentity,
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
    *,
    timeout: float,
) -> None:
    """Commit; raises CommitFailedError naming every refused partition."""
    values = {
        tp: v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(v)
        for tp, v in offsets.items()
    }
    topics = [
        OffsetCommitRequestTopic(
            name=topic,
            partitions=[
                OffsetCommitRequestPartition(
                    partition_index=p,
                    committed_offset=values[(topic, p)].offset,
                    committed_leader_epoch=values[(topic, p)].leader_epoch,
                    committed_metadata=values[(topic, p)].metadata,
                )
                for p in parts
            ],
        )
        for topic, parts in _by_topic(values).items()
    ]
    version = conn.versions.pick(OffsetCommitRequest)
    body = OffsetCommitRequest(
        group_id=who.group_id,
        generation_id_or_member_epoch=who.generation_id,
        member_id=who.member_id,
        group_instance_id=who.group_instance_id if version >= 7 else None,
        topics=topics,
    )
    resp = await conn.call(body, version, timeout=timeout)
    assert isinstance(resp, OffsetCommitResponse)
    errors = {
        (t.name, p.partition_index): ErrorCode(p.error_code)
        for t in resp.topics
        for p in t.partitions
        if p.error_code != ErrorCode.NONE
    }
    if errors:
        raise CommitFailedError(errors)


async def fetch_offsets(
    conn: BrokerConnection,
    group_id: str,
    partitions: Iterable[TopicPartition] | None,
    *,
    timeout: float,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Committed offsets (None partitions: all the group has); partitions without a
    committed offset are left out."""
    wanted = None if partitions is None else _by_topic(partitions)
    version = conn.versions.pick(OffsetFetchRequest)
    if version >= 8:
        group = OffsetFetchRequestGroup(
            group_id=group_id,
            topics=None
            if wanted is None
            else [
                OffsetFetchRequestTopics(name=t, partition_indexes=ps) for t, ps in wanted.items()
            ],
        )
        body = OffsetFetchRequest(groups=[group], require_stable=True)
    else:
        if wanted is None and version < 2:
            raise KafkaClientError("OffsetFetch below v2 cannot fetch all offsets")
        body = OffsetFetchRequest(
            group_id=group_id,
            topics=None
            if wanted is None
            else [
                OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in wanted.items()
            ],
            require_stable=version >= 7,
        )
    resp = await conn.call(body, version, timeout=timeout)
    assert isinstance(resp, OffsetFetchResponse)
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    if version >= 8:
        [group_resp] = resp.groups
        if group_resp.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(group_resp.error_code, f"OffsetFetch({group_id})")
        rows = [(t.name, p) for t in group_resp.topics for p in t.partitions]
    else:
        if version >= 2 and resp.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(resp.error_code, f"OffsetFetch({group_id})")
        rows = [(t.name, p) for t in resp.topics for p in t.partitions]  # type: ignore[misc]
    for topic, p in rows:
        if p.error_code != ErrorCode.NONE:
            raise KafkaClientError.of(p.error_code, f"OffsetFetch({group_id}, {topic})")
        if p.committed_offset >= 0:
            out[(topic, p.partition_index)] = OffsetAndMetadata(
                p.committed_offset, p.metadata, p.committed_leader_epoch
            )
    return out
