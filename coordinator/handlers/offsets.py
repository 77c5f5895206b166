"""The offsets APIs (OffsetCommit, OffsetFetch, OffsetDelete): wire messages of every
version to the offsets manager's inputs, its results back to wire messages, with the
per-topic checks Kafka's API layer makes (ACLs, unknown topics and topic ids).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import partial

from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.apis.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.errors import ErrorCode

from ..group.requests import (
    OffsetCommitInput,
    PartitionCommit,
    TopicCommit,
)
from ..group.results import (
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    PartitionError,
    PartitionOffset,
    TopicErrors,
    TopicOffsets,
)
from ..security.acls import Operation
from ..security.authz import may_topic
from . import versions as V
from .admission import (
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
)
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Outcome, Pending, call

OFFSET_COMMIT_KEY = 8
TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
# What each topic needs, as the admission table says (handlers check them per topic).
assert OFFSET_COMMIT.topics and OFFSET_FETCH.topics and OFFSET_DELETE.topics
OFFSET_COMMIT_TOPICS: Operation = OFFSET_COMMIT.topics
OFFSET_FETCH_TOPICS: Operation = OFFSET_FETCH.topics
OFFSET_DELETE_TOPICS: Operation = OFFSET_DELETE.topics


#: The key of a request topic whose id this node does not know (no topic name has a space).
UNKNOWN_ID = "unknown id "


def _topic_key(node: Node, name: str, topic_id: uuid.UUID, by_id: bool) -> str:
    if not by_id:
        return name
    found = node.catalog.by_id(topic_id)
    return found.name if found is not None else f"{UNKNOWN_ID}{topic_id}"


def offset_commit(
    node: Node, body: OffsetCommitRequest, version: int, conn: ConnectionContext
) -> Outcome[OffsetCommitResponse]:
    # Unauthorized and unknown partitions are refused by the API layer, as in Kafka (the
    # group was admitted: ``commit_refused`` answers a refused one).
    # v10+ name topics by id: each request topic is keyed by its name, or (an id this node
    # does not know) by a key no topic name can be.
    keys = [
        _topic_key(node, t.name, t.topic_id, version >= V.OFFSET_COMMIT_BY_TOPIC_ID)
        for t in body.topics
    ]
    known, refused = _committable(node, conn, body, keys)
    inp = OffsetCommitInput(
        group_id=body.group_id,
        generation_id=body.generation_id_or_member_epoch
        if version >= V.OFFSET_COMMIT_MEMBER
        else -1,
        member_id=body.member_id if version >= V.OFFSET_COMMIT_MEMBER else "",
        group_instance_id=body.group_instance_id,
        retention_time_ms=body.retention_time_ms if version in V.OFFSET_COMMIT_RETENTION else -1,
        topics=known,
        api_version=version,
    )
    render = partial(_commit_response, body, keys, refused)
    if not known:
        return Outcome(render(OffsetCommitResult(topics=[])))
    token = Pending()
    return call(
        node.groups.commit_offsets(token, inp, node.now_ms()),
        token,
        render,
        lambda code: render(
            OffsetCommitResult(
                [
                    TopicErrors(t.topic, [PartitionError(p.partition, code) for p in t.partitions])
                    for t in known
                ]
            )
        ),
    )


def _committable(
    node: Node, conn: ConnectionContext, body: OffsetCommitRequest, keys: list[str]
) -> tuple[list[TopicCommit], dict[tuple[str, int], int]]:
    """The partitions the group is asked to commit, and those the API layer refuses (topic
    key, partition) -> error: an unknown topic id, a topic not authorized, no such
    partition."""
    refused: dict[tuple[str, int], int] = {}
    known: list[TopicCommit] = []
    for t, key in zip(body.topics, keys, strict=True):
        parts = []
        name = key if not key.startswith(UNKNOWN_ID) else None
        topic_allowed = name is not None and may_topic(
            node.security, conn, OFFSET_COMMIT_TOPICS, name
        )
        for p in t.partitions:
            if name is None:
                refused[(key, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_ID
            elif not topic_allowed:
                refused[(key, p.partition_index)] = TOPIC_AUTHORIZATION_FAILED
            elif node.catalog.has_partition(name, p.partition_index):
                parts.append(
                    PartitionCommit(
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.committed_metadata,
                    )
                )
            else:
                refused[(key, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if parts and name is not None:
            known.append(TopicCommit(name, parts))
    return known, refused


def _commit_response(
    body: OffsetCommitRequest,
    keys: list[str],
    refused: dict[tuple[str, int], int],
    r: OffsetCommitResult,
) -> OffsetCommitResponse:
    if not refused and not any(p.error_code for t in r.topics for p in t.partitions):
        return commit_refused(body, 0, ErrorCode.NONE)  # all committed (most commits)
    errors: dict[tuple[str, int], int] = {
        (t.topic, p.partition): p.error_code for t in r.topics for p in t.partitions
    }
    errors.update(refused)
    # Answer in request order.
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=errors.get((key, p.partition_index), 0),
                    )
                    for p in t.partitions
                ],
            )
            for t, key in zip(body.topics, keys, strict=True)
        ]
    )


def commit_refused(
    body: OffsetCommitRequest, version: int, code: ErrorCode
) -> OffsetCommitResponse:
    """Admission's refusal: every partition asked for carries the code, in request order
    (and, with NONE, the answer to a commit of every partition)."""
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ]
    )


def _fetch_group(
    node: Node,
    conn: ConnectionContext,
    group_id: str,
    topics: list[tuple[str, list[int]]] | None,
    version: int,
    require_stable: bool,
    refused: int | None,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> OffsetFetchResult:
    if refused is not None:  # by admission
        # v0-1 carry the error in every requested partition; later versions at the top.
        folded = [
            TopicOffsets(n, [PartitionOffset(p, -1, -1, "") for p in ps]) for n, ps in topics or []
        ]
        return OffsetFetchResult(
            refused, folded if version < V.OFFSET_FETCH_TOP_LEVEL_ERROR else []
        )
    r = node.groups.fetch_offsets(
        group_id, topics, node.now_ms(), require_stable, member_id, member_epoch
    )
    visible = []
    for t in r.topics:
        if may_topic(node.security, conn, OFFSET_FETCH_TOPICS, t.topic):
            visible.append(t)
        elif topics is not None:  # asked for by name: say so; "all topics" just omits it
            denied = [
                PartitionOffset(p.partition, -1, -1, "", TOPIC_AUTHORIZATION_FAILED)
                for p in t.partitions
            ]
            visible.append(TopicOffsets(t.topic, denied))
    return OffsetFetchResult(r.error_code, visible)


def offset_fetch(
    node: Node,
    body: OffsetFetchRequest,
    version: int,
    conn: ConnectionContext,
    refused: Mapping[str, int],
) -> Outcome[OffsetFetchResponse]:
    if version >= V.OFFSET_FETCH_BATCHED:
        groups = [
            _fetch_batched(node, conn, g, version, body.require_stable, refused.get(g.group_id))
            for g in body.groups
        ]
        return Outcome(OffsetFetchResponse(groups=groups))
    wanted_topics = (
        None if body.topics is None else [(t.name, t.partition_indexes) for t in body.topics]
    )
    stable = version >= V.OFFSET_FETCH_REQUIRE_STABLE and body.require_stable
    r = _fetch_group(
        node, conn, body.group_id, wanted_topics, version, stable, refused.get(body.group_id)
    )
    fold = version < V.OFFSET_FETCH_TOP_LEVEL_ERROR and r.error_code != 0
    topics = [
        OffsetFetchResponseTopic(
            name=t.topic,
            partitions=[
                # v0-1 have no top-level error: a group error goes into every partition.
                OffsetFetchResponsePartition(
                    partition_index=p.partition,
                    committed_offset=-1 if fold else p.offset,
                    committed_leader_epoch=p.leader_epoch,
                    metadata="" if fold else p.metadata,
                    error_code=r.error_code if fold else p.error_code,
                )
                for p in t.partitions
            ],
        )
        for t in r.topics
    ]
    return Outcome(
        OffsetFetchResponse(
            topics=topics,
            error_code=r.error_code if version >= V.OFFSET_FETCH_TOP_LEVEL_ERROR else 0,
        )
    )


def _fetch_batched(
    node: Node,
    conn: ConnectionContext,
    g: OffsetFetchRequestGroup,
    version: int,
    require_stable: bool,
    refused: int | None,
) -> OffsetFetchResponseGroup:
    """One group of a v8+ (batched) OffsetFetch."""
    by_id = version >= V.OFFSET_FETCH_BY_TOPIC_ID
    wanted: list[tuple[str, list[int]]] | None = None
    unknown = []  # v10+: topic ids this node does not know
    for t in g.topics or []:
        key = _topic_key(node, t.name, t.topic_id, by_id)
        if key.startswith(UNKNOWN_ID):
            unknown.append(t)
        else:
            wanted = (wanted or []) + [(key, t.partition_indexes)]
    if g.topics is not None and wanted is None:
        wanted = []
    r = _fetch_group(
        node,
        conn,
        g.group_id,
        wanted,
        version,
        require_stable,
        refused,
        g.member_id,  # v9+: a KIP-848 member names itself and its epoch
        g.member_epoch,
    )
    unknown_answers = [
        OffsetFetchResponseTopics(
            name=t.name,
            topic_id=t.topic_id,
            partitions=[
                OffsetFetchResponsePartitions(
                    partition_index=p,
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                )
                for p in t.partition_indexes
            ],
        )
        for t in (unknown if r.error_code == ErrorCode.NONE else [])
    ]
    return OffsetFetchResponseGroup(
        group_id=g.group_id,
        error_code=r.error_code,
        topics=[
            OffsetFetchResponseTopics(
                name=t.topic,
                topic_id=node.catalog.id_for(t.topic),
                partitions=[
                    OffsetFetchResponsePartitions(
                        partition_index=p.partition,
                        committed_offset=p.offset,
                        committed_leader_epoch=p.leader_epoch,
                        metadata=p.metadata,
                        error_code=p.error_code,
                    )
                    for p in t.partitions
                ],
            )
            for t in r.topics
        ]
        + unknown_answers,
    )


def offset_delete(
    node: Node, body: OffsetDeleteRequest, version: int, conn: ConnectionContext
) -> Outcome[OffsetDeleteResponse]:
    wanted = [(t.name, [p.partition_index for p in t.partitions]) for t in body.topics]
    readable = {n for n, _ps in wanted if may_topic(node.security, conn, OFFSET_DELETE_TOPICS, n)}
    allowed = [(n, ps) for n, ps in wanted if n in readable]

    def render(r: OffsetDeleteResult) -> OffsetDeleteResponse:
        topics = list(r.topics)
        if not r.error_code:
            topics += [
                TopicErrors(n, [PartitionError(p, TOPIC_AUTHORIZATION_FAILED) for p in ps])
                for n, ps in wanted
                if n not in readable
            ]
        by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
        for t in topics:
            by_topic.setdefault(t.topic, []).extend(
                OffsetDeleteResponsePartition(partition_index=p.partition, error_code=p.error_code)
                for p in t.partitions
            )
        return OffsetDeleteResponse(
            error_code=r.error_code,
            topics=[OffsetDeleteResponseTopic(name=n, partitions=p) for n, p in by_topic.items()],
        )

    token = Pending()
    return call(
        node.groups.delete_offsets(token, body.group_id, allowed, node.now_ms()),
        token,
        render,
        lambda code: OffsetDeleteResponse(error_code=code, topics=[]),
    )


def offset_delete_refused(
    body: OffsetDeleteRequest, version: int, code: ErrorCode
) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code, topics=[])
