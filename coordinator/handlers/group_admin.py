"""The group administration APIs (DescribeGroups, ListGroups, DeleteGroups): wire messages
of every version to the state machine's queries and deletions, their results back.
"""

from __future__ import annotations

from collections.abc import Mapping

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
from protocol.apis.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)
from protocol.errors import ErrorCode

from ..group.results import (
    DeleteGroupsResult,
    DescribedGroup,
)
from ..security.acls import Operation
from ..security.authz import group_operations, may_cluster
from . import versions as V
from .admission import (
    LIST_GROUPS,
    refusal,
)
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Outcome, Pending, answer_in, call

GROUP_AUTHORIZATION_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED


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


#: DeleteGroups v3's answer for a deletion this node could not store (Kafka 4.4, KIP-1331:
#: GROUP_DELETION_FAILED where a step of a deletion fails and the group is kept, with why).
DELETION_NOT_STORED = (
    "The deletion could not be written to the coordinator's store; the group and its"
    " offsets are kept. Retry the deletion."
)


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
        def answer(group_id: str) -> tuple[int, str | None]:
            code = errors.get(group_id, GROUP_AUTHORIZATION_FAILED)
            if not code and store_error:
                return _not_stored(node, group_id, version, store_error)
            return code, DELETE_GROUP_ERROR_MESSAGES.get(code)

        results = []
        for g in body.groups_names:
            code, message = answer(g)
            results.append(
                DeleteGroupsResponseDeletableGroupResult(
                    group_id=g, error_code=code, error_message=message
                )
            )
        return DeleteGroupsResponse(results=results)

    return call(effects, token, lambda _result: render(), render)


def _not_stored(
    node: Node, group_id: str, version: int, store_error: int
) -> tuple[int, str | None]:
    """A deletion whose write failed: the state machine rolled the group back, so it is
    kept, as Kafka keeps a group whose deletion failed. A node that no longer coordinates
    the group (its lease ran out) says so, for the client to find the new coordinator; v3
    is told GROUP_DELETION_FAILED and why; v0-2 get the store's retriable error, as before
    (Kafka's downgrade of GROUP_DELETION_FAILED to UNKNOWN_SERVER_ERROR below v3 would
    turn a retried request into a failed one)."""
    routing = node.routing
    moved = routing.refusal(group_id, node.now_ms()) if routing.clustered else None
    if moved is not None:
        return moved, DELETE_GROUP_ERROR_MESSAGES.get(moved)
    if version >= V.DELETE_GROUPS_ERROR_MESSAGE:
        return ErrorCode.GROUP_DELETION_FAILED, DELETION_NOT_STORED
    return store_error, DELETE_GROUP_ERROR_MESSAGES.get(store_error)
