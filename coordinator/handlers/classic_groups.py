"""The classic protocol's membership APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup):
wire messages of every version to the state machine's inputs, its results back to wire
messages. No group logic lives here (that is ``coordinator.group``); the KIP-848 protocol's
are in ``consumer_groups.py``, the offsets APIs in ``offsets.py``.
"""

from __future__ import annotations

from functools import partial

from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from protocol.apis.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
)
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.errors import ErrorCode

from ..group.requests import (
    HeartbeatInput,
    JoinGroupInput,
    LeaveGroupInput,
    LeavingMember,
    SyncGroupInput,
)
from ..group.results import (
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    SyncGroupResult,
)
from . import versions as V
from .admission import (
    heartbeat_refused_code,
)
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Outcome, Pending, call

GROUP_AUTHORIZATION_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED


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
