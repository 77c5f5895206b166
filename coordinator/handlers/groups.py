"""Group APIs: translate wire messages (every version) to the state machine's inputs and its
results back to wire messages. No group logic lives here (that is ``coordinator.group``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import partial

from protocol.apis.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseDeletableGroupResult,
)
from protocol.apis.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    DescribeGroupsResponseDescribedGroupMember,
)
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from protocol.apis.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
)
from protocol.apis.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)
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
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.errors import ErrorCode

from ..connection_context import ConnectionContext
from ..group.requests import (
    HeartbeatInput,
    JoinGroupInput,
    LeaveGroupInput,
    LeavingMember,
    OffsetCommitInput,
    PartitionCommit,
    SyncGroupInput,
    TopicCommit,
)
from ..group.results import (
    DeleteGroupsResult,
    DescribedGroup,
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    PartitionError,
    PartitionOffset,
    SyncGroupResult,
    TopicErrors,
    TopicOffsets,
)
from ..node import Node
from ..security.acls import Operation
from ..security.authz import group_operations, may_cluster, may_topic
from . import versions as V
from .admission import (
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    heartbeat_refused_code,
    refusal,
)
from .outcome import Outcome, Pending, answer_in, call

GROUP_AUTHORIZATION_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
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


def join_group(
    node: Node, body: JoinGroupRequest, version: int, conn: ConnectionContext
) -> Outcome[JoinGroupResponse]:
    # A rebalance parks one of these per member: nothing is made per call that a
    # module-level function or a per-version renderer can be (each object a parked request
    # holds is one more for the garbage collector to go through while it waits).
    render = _join_renderer(version)
    inp = JoinGroupInput(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
        client_id=conn.client_id,
        client_host=conn.client_host,
        session_timeout_ms=body.session_timeout_ms,
        # v0 has no rebalance timeout: the broker uses the session timeout.
        rebalance_timeout_ms=body.session_timeout_ms
        if version < V.JOIN_GROUP_REBALANCE_TIMEOUT
        else body.rebalance_timeout_ms,
        protocol_type=body.protocol_type,
        protocols=[(p.name, p.metadata) for p in body.protocols],
        api_version=version,
        reason=body.reason,
    )
    token = Pending()
    return call(
        node.groups.join_group(token, inp, node.now_ms()),
        token,
        render,
        partial(_join_failed, render, body.member_id),
    )


def join_refused(body: JoinGroupRequest, version: int, code: ErrorCode) -> JoinGroupResponse:
    """Admission's refusal: Kafka names no member when unauthorized; a coordinator's
    refusal echoes the request's."""
    member_id = "" if code == GROUP_AUTHORIZATION_FAILED else body.member_id
    return _join_renderer(version)(JoinGroupResult(error_code=code, member_id=member_id))


class _JoinRenderer:
    """A JoinGroup result as the response of one version."""

    __slots__ = ("version",)

    def __init__(self, version: int) -> None:
        self.version = version

    def __call__(self, r: JoinGroupResult) -> JoinGroupResponse:
        version = self.version
        return JoinGroupResponse(
            error_code=r.error_code,
            generation_id=r.generation_id,
            protocol_type=r.protocol_type if version >= V.JOIN_GROUP_NULLABLE_PROTOCOL else None,
            # v0-6 cannot say null: no protocol is "".
            protocol_name=(
                r.protocol_name
                if version >= V.JOIN_GROUP_NULLABLE_PROTOCOL
                else (r.protocol_name or "")
            ),
            leader=r.leader,
            skip_assignment=r.skip_assignment if version >= V.JOIN_GROUP_SKIP_ASSIGNMENT else False,
            member_id=r.member_id,
            members=[
                JoinGroupResponseMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata,
                )
                for m in r.members
            ],
        )


_JOIN_RENDERERS: dict[int, _JoinRenderer] = {}


def _join_renderer(version: int) -> _JoinRenderer:
    render = _JOIN_RENDERERS.get(version)
    if render is None:
        render = _JOIN_RENDERERS[version] = _JoinRenderer(version)
    return render


def _join_failed(render: _JoinRenderer, member_id: str, code: ErrorCode) -> JoinGroupResponse:
    return render(JoinGroupResult(error_code=code, member_id=member_id))


def sync_group(
    node: Node, body: SyncGroupRequest, version: int, conn: ConnectionContext
) -> Outcome[SyncGroupResponse]:
    # Parked once per member in a rebalance, as JoinGroup: no closures per call.
    inp = SyncGroupInput(
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
        protocol_type=body.protocol_type,
        protocol_name=body.protocol_name,
        assignments=[(a.member_id, a.assignment) for a in body.assignments],
        api_version=version,
    )
    token = Pending()
    return call(
        node.groups.sync_group(token, inp, node.now_ms()), token, _sync_response, _sync_failed
    )


def _sync_response(r: SyncGroupResult) -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=r.error_code,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )


def _sync_failed(code: ErrorCode) -> SyncGroupResponse:
    return _sync_response(SyncGroupResult(error_code=code))


def sync_refused(body: SyncGroupRequest, version: int, code: ErrorCode) -> SyncGroupResponse:
    return _sync_failed(code)


def heartbeat(
    node: Node, body: HeartbeatRequest, version: int, conn: ConnectionContext
) -> Outcome[HeartbeatResponse]:
    # The hottest request: no closures are made per call, the renderers are module-level.
    inp = HeartbeatInput(
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
    )
    token = Pending()
    effects = node.groups.heartbeat(token, inp, node.now_ms())
    return call(effects, token, _heartbeat_response, _heartbeat_failed)


def _heartbeat_response(r: HeartbeatResult) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=r.error_code)


def _heartbeat_failed(code: ErrorCode) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)


def heartbeat_refused(body: HeartbeatRequest, version: int, code: ErrorCode) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=heartbeat_refused_code(code))


def leave_group(
    node: Node, body: LeaveGroupRequest, version: int, conn: ConnectionContext
) -> Outcome[LeaveGroupResponse]:
    if version < V.LEAVE_GROUP_BATCHED:
        members = [LeavingMember(body.member_id)]
    else:
        members = [LeavingMember(m.member_id, m.group_instance_id, m.reason) for m in body.members]
    inp = LeaveGroupInput(group_id=body.group_id, members=members)

    def render(r: LeaveGroupResult) -> LeaveGroupResponse:
        if version < V.LEAVE_GROUP_BATCHED:
            # v0-2 are single-member: fold the member's error into the top level.
            error = r.error_code or (r.members[0].error_code if r.members else 0)
            return LeaveGroupResponse(error_code=error)
        return LeaveGroupResponse(
            error_code=r.error_code,
            members=[
                LeaveGroupResponseMemberResponse(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    error_code=m.error_code,
                )
                for m in r.members
            ],
        )

    token = Pending()
    return call(
        node.groups.leave_group(token, inp, node.now_ms()),
        token,
        render,
        lambda code: render(LeaveGroupResult(error_code=code)),
    )


def leave_refused(body: LeaveGroupRequest, version: int, code: ErrorCode) -> LeaveGroupResponse:
    # v0-2 carry no member list; from v3 it is empty.
    if version < V.LEAVE_GROUP_BATCHED:
        return LeaveGroupResponse(error_code=code)
    return LeaveGroupResponse(error_code=code, members=[])


def offset_commit(
    node: Node, body: OffsetCommitRequest, version: int, conn: ConnectionContext
) -> Outcome[OffsetCommitResponse]:
    # Unauthorized and unknown partitions are refused by the API layer, as in Kafka (the
    # group was admitted: ``commit_refused`` answers a refused one).
    refused: dict[tuple[str, int], int] = {}
    known: list[TopicCommit] = []
    # v10+ name topics by id: each request topic is keyed by its name, or (an id this node
    # does not know) by a key no topic name can be.
    keys = [
        _topic_key(node, t.name, t.topic_id, version >= V.OFFSET_COMMIT_BY_TOPIC_ID)
        for t in body.topics
    ]
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

    def render(r: OffsetCommitResult) -> OffsetCommitResponse:
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


def commit_refused(
    body: OffsetCommitRequest, version: int, code: ErrorCode
) -> OffsetCommitResponse:
    """Admission's refusal: every partition asked for carries the code, in request order."""
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
        by_id = version >= V.OFFSET_FETCH_BY_TOPIC_ID
        groups = []
        for g in body.groups:
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
                body.require_stable,
                refused.get(g.group_id),
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
            groups.append(
                OffsetFetchResponseGroup(
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
            )
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


def describe_groups(
    node: Node,
    body: DescribeGroupsRequest,
    version: int,
    conn: ConnectionContext,
    refused: Mapping[str, int],
) -> Outcome[DescribeGroupsResponse]:
    with_ops = (
        version >= V.DESCRIBE_GROUPS_AUTHORIZED_OPERATIONS and body.include_authorized_operations
    )
    here = [g for g in body.groups if g not in refused]
    described = {g.group_id: g for g in node.groups.describe_groups(here)}
    for group_id in body.groups:
        if (code := refused.get(group_id)) is not None:
            if code != GROUP_AUTHORIZATION_FAILED:  # another node's, or loading
                described[group_id] = DescribedGroup(code, group_id, "", "", "", [])
        elif version >= V.DESCRIBE_GROUPS_NOT_FOUND and described[group_id].group_state == "Dead":
            described[group_id] = DescribedGroup(
                ErrorCode.GROUP_ID_NOT_FOUND, group_id, "Dead", "", "", []
            )
    response = DescribeGroupsResponse(
        groups=[
            DescribeGroupsResponseDescribedGroup(
                error_code=GROUP_AUTHORIZATION_FAILED,
                group_id=group_id,
                group_state="",
                protocol_type="",
                protocol_data="",
                members=[],
                authorized_operations=-2147483648,
            )
            if (g := described.get(group_id)) is None
            else DescribeGroupsResponseDescribedGroup(
                error_code=g.error_code,
                error_message=(
                    f"Group {g.group_id} not found."
                    if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND
                    else None
                ),
                group_id=g.group_id,
                group_state=g.group_state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                members=[
                    DescribeGroupsResponseDescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                    )
                    for m in g.members
                ],
                authorized_operations=(
                    group_operations(node.security, conn, g.group_id) if with_ops else -2147483648
                ),
            )
            for group_id in body.groups
        ]
    )
    return Outcome(response)


def list_groups(
    node: Node, body: ListGroupsRequest, version: int, conn: ConnectionContext
) -> Outcome[ListGroupsResponse]:
    # Kafka: DESCRIBE on the cluster lists every group; otherwise those one may describe.
    everything = may_cluster(node.security, conn, Operation.DESCRIBE)
    principal, host = conn.principal, conn.client_host
    response = ListGroupsResponse(
        error_code=0,
        groups=[
            ListGroupsResponseListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in node.groups.list_groups(body.states_filter, body.types_filter)
            if everything or refusal(node, principal, host, LIST_GROUPS, g.group_id) is None
        ],
    )
    return Outcome(response)


#: DeleteGroups v3's per-group ErrorMessage: Kafka's message for each error a deletion gets
#: (Errors.java); v0-2 drop it (ignorable).
DELETE_GROUP_ERROR_MESSAGES: dict[int, str] = {
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: (
        "The coordinator is loading and hence can't process requests."
    ),
}


def delete_groups(
    node: Node,
    body: DeleteGroupsRequest,
    version: int,
    conn: ConnectionContext,
    refused: Mapping[str, int],
) -> Outcome[DeleteGroupsResponse]:
    token = Pending()
    effects = node.groups.delete_groups(
        token, [g for g in body.groups_names if g not in refused], node.now_ms()
    )
    result = answer_in(effects, token, DeleteGroupsResult)
    errors: dict[str, int] = {e.group_id: e.error_code for e in result.groups}
    errors.update(refused)

    def render(store_error: int = ErrorCode.NONE) -> DeleteGroupsResponse:
        # A deletion that could not be stored is answered with the store's error.
        def code(group_id: str) -> int:
            return errors.get(group_id, GROUP_AUTHORIZATION_FAILED) or store_error

        return DeleteGroupsResponse(
            results=[
                DeleteGroupsResponseDeletableGroupResult(
                    group_id=g,
                    error_code=code(g),
                    error_message=DELETE_GROUP_ERROR_MESSAGES.get(code(g)),
                )
                for g in body.groups_names
            ]
        )

    return call(effects, token, lambda _result: render(), render)


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
