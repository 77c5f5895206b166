"""LeaveGroup: batches (KIP-345, v3+), unknown members, pending ids."""

from __future__ import annotations

from protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from protocol.errors import ErrorCode

from ..probe import Probe, describe
from ..registry import scenario
from ..steps import form_group

AREA = "LeaveGroup"
LEAVE_GROUP = 13


@scenario(AREA, faults=("batch_leave_first_only",), requires={LEAVE_GROUP: 3})
async def testBatchLeaveGroup(probe: Probe) -> None:
    a, b, c = await form_group(probe, 3)
    version = probe.version(LEAVE_GROUP)
    req = LeaveGroupRequest(
        group_id=a.group_id,
        members=[LeaveGroupRequestMemberIdentity(member_id=m.member_id) for m in (b, c)],
    )
    resp = await probe.within(a.conn.send(req, version), probe.target.reply_s, "LeaveGroup")
    text = describe(req, version)
    probe.check("top-level error", 0, resp.error_code, text)
    probe.check("per-member errors", [0, 0], [r.error_code for r in resp.members], text)
    for gone in (b, c):
        gone.expect(
            "Heartbeat of a member that left", ErrorCode.UNKNOWN_MEMBER_ID, await gone.heartbeat()
        )


@scenario(AREA, faults=("unknown_member_answered_ok",), requires={LEAVE_GROUP: 3})
async def testLeaveGroupUnknownMemberIdExistingGroup(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    m.member_id = "not-a-member"
    resp = await m.leave()
    probe.check("top-level error", 0, resp.error_code, m.last_request)
    codes = [r.error_code for r in resp.members]
    probe.check("per-member error", [ErrorCode.UNKNOWN_MEMBER_ID], codes, m.last_request)


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testLeaveGroupV0UnknownMemberFoldsTheError(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    m.member_id = "not-a-member"
    resp = await m.leave(version=0)
    m.expect("LeaveGroup v0 of an unknown member", ErrorCode.UNKNOWN_MEMBER_ID, resp.error_code)
