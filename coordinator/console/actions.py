"""The console's three actions (``--http-admin``), as the Kafka APIs would do them.

Each is one call into the state machine, carried out by the runtime like a request's
(records written before the answer), after the admission the matching Kafka API makes
(its row of ``handlers.admission``: the ACLs, then this node coordinating the group):

- delete an empty group: DeleteGroups (DELETE on the group);
- reset the offsets of an Empty group: OffsetCommit with generation -1, as
  ``kafka-consumer-groups.sh --reset-offsets`` does (READ on the group and the topic);
- remove a static member: LeaveGroup by instance id, KIP-345 (READ on the group).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from protocol.errors import ErrorCode

from ..group.requests import (
    LeaveGroupInput,
    LeavingMember,
    OffsetCommitInput,
    PartitionCommit,
    TopicCommit,
)
from ..group.results import DeleteGroupsResult, LeaveGroupResult, OffsetCommitResult
from ..handlers.admission import (
    CONSOLE_DELETE_GROUP,
    CONSOLE_REMOVE_STATIC_MEMBER,
    CONSOLE_RESET_OFFSETS,
    Route,
    refusal,
)
from ..handlers.node import Node
from ..handlers.outcome import Outcome, Pending, call
from ..shared.accounts import ResourceType
from .views import Viewer

#: OffsetCommit's version whose answers the reset is given as (an unknown group is named).
_COMMIT_VERSION = 9
#: ListOffsets' answer for every partition of a virtual topic: earliest = latest = 0.
LOG_END = 0

CarryOut = Callable[[Outcome[Any]], Any]
TOPIC = ResourceType.TOPIC


class ActionError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status
        self.message = message


def _admit(
    node: Node, viewer: Viewer, route: Route, group_id: str, topics: tuple[str, ...] = ()
) -> None:
    """The action's admission (its row of the admission table), as an HTTP refusal: 403
    for an ACL, 409 for a group another node coordinates."""
    code = refusal(node, viewer.principal, viewer.host, route, group_id, topics)
    if code is None:
        return
    if code is ErrorCode.GROUP_AUTHORIZATION_FAILED:
        who = f"{viewer.principal} may not {route.operation.name}"
        raise ActionError(403, f"{who} group {group_id!r}")
    if code is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        assert route.topics is not None
        denied = next(t for t in topics if not viewer.may(node, route.topics, TOPIC, t))
        raise ActionError(403, f"{viewer.principal} may not {route.topics.name} topic {denied!r}")
    raise ActionError(409, f"this node does not coordinate {group_id!r} ({code.name})")


async def _answer(carry_out: CarryOut, outcome: Outcome[Any]) -> Any:
    reply = carry_out(outcome)
    if isinstance(reply, asyncio.Future):
        return await reply
    return reply


async def delete_group(node: Node, carry_out: CarryOut, viewer: Viewer, group_id: str) -> None:
    _admit(node, viewer, CONSOLE_DELETE_GROUP, group_id)
    token = Pending()
    effects = node.groups.delete_groups(token, [group_id], node.now_ms())
    result: DeleteGroupsResult = await _answer(carry_out, call(effects, token, lambda r: r))
    code = ErrorCode(result.groups[0].error_code)
    if code is ErrorCode.GROUP_ID_NOT_FOUND:
        raise ActionError(404, f"group {group_id!r} does not exist")
    if code is ErrorCode.NON_EMPTY_GROUP:
        raise ActionError(409, f"group {group_id!r} has members: only an Empty group is deleted")
    if code is not ErrorCode.NONE:
        raise ActionError(500, f"DeleteGroups: {code.name}")


async def reset_offsets(
    node: Node,
    carry_out: CarryOut,
    viewer: Viewer,
    group_id: str,
    topic: str,
    to_offset: int = 0,
) -> dict[int, int]:
    """Every partition of ``topic`` to ``to_offset``, clamped to the log's range (a virtual
    topic's is [0, 0]); returns partition -> new offset."""
    _admit(node, viewer, CONSOLE_RESET_OFFSETS, group_id, (topic,))
    g = node.groups.groups.get(group_id)
    if g is None:
        raise ActionError(404, f"group {group_id!r} does not exist")
    if not g.is_empty():
        raise ActionError(
            409, f"offsets of {group_id!r} are reset only while it is Empty; it is {g.state_name}"
        )
    known = node.catalog.get(topic)
    if known is None:
        raise ActionError(404, f"topic {topic!r} does not exist")
    target = min(max(to_offset, 0), LOG_END)
    commit = OffsetCommitInput(
        group_id=group_id,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            TopicCommit(
                topic,
                [PartitionCommit(p, target, metadata="") for p in range(known.partitions)],
            )
        ],
        api_version=_COMMIT_VERSION,
    )
    token = Pending()
    effects = node.groups.commit_offsets(token, commit, node.now_ms())
    result: OffsetCommitResult = await _answer(carry_out, call(effects, token, lambda r: r))
    errors = {ErrorCode(p.error_code).name for t in result.topics for p in t.partitions}
    errors.discard("NONE")
    if errors:
        raise ActionError(409, f"OffsetCommit: {', '.join(sorted(errors))}")
    return {p: target for p in range(known.partitions)}


async def remove_static_member(
    node: Node, carry_out: CarryOut, viewer: Viewer, group_id: str, instance_id: str
) -> None:
    _admit(node, viewer, CONSOLE_REMOVE_STATIC_MEMBER, group_id)
    if group_id not in node.groups.groups:
        raise ActionError(404, f"group {group_id!r} does not exist")
    leave = LeaveGroupInput(
        group_id, [LeavingMember("", instance_id, f"removed in the console by {viewer.principal}")]
    )
    token = Pending()
    effects = node.groups.leave_group(token, leave, node.now_ms())
    result: LeaveGroupResult = await _answer(carry_out, call(effects, token, lambda r: r))
    code = ErrorCode(result.error_code) if result.error_code else None
    if code is None and result.members:
        code = ErrorCode(result.members[0].error_code) if result.members[0].error_code else None
    if code is ErrorCode.UNKNOWN_MEMBER_ID:
        raise ActionError(404, f"no static member {instance_id!r} in {group_id!r}")
    if code is not None:
        raise ActionError(409, f"LeaveGroup: {code.name}")
