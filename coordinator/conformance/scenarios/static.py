"""KIP-345 static membership and KIP-814 SkipAssignment."""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe
from ..registry import scenario
from ..steps import join_round, new_members, sync_round

AREA = "KIP-345 static membership"
JOIN_GROUP, LEAVE_GROUP = 11, 13


async def _static_group(probe: Probe, n: int, **kwargs: Any) -> list[Member]:
    gid = probe.group_id()
    members = await new_members(probe, gid, n, **kwargs)
    for i, m in enumerate(members):
        m.instance_id = probe.instance_id(str(i))

    first = members[0]
    await first.join_ok()
    await sync_round([first])
    if n > 1:
        await join_round([first], members[1:])
        await sync_round(members)
    return members


async def _replacement(probe: Probe, old: Member) -> Member:
    """A new process with the same instance id, on a new connection."""
    conn = await probe.connect("conformance-replacement")
    new = Member(probe, conn, old.group_id, instance_id=old.instance_id, protocols=old.protocols)
    new.protocol_name = old.protocol_name
    return new


@scenario(AREA, faults=("static_member_id_required",), requires={JOIN_GROUP: 5})
async def testStaticMemberJoinAsFirstMember(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    m.instance_id = probe.instance_id()
    resp = await m.join_once()
    m.expect("JoinGroup of a new static member with an empty member id", 0, resp.error_code)
    probe.check("a member id is assigned", True, bool(resp.member_id), m.last_request)


@scenario(AREA, faults=("static_replacement_rebalances",), requires={JOIN_GROUP: 5})
async def testJoinGroupReplaceStaticMemberWithoutRebalance(probe: Probe) -> None:
    leader, follower = await _static_group(probe, 2)
    new = await _replacement(probe, follower)
    resp = await new.join_once(wait=probe.target.reply_s)
    new.expect("JoinGroup of a restarted static follower", 0, resp.error_code)
    probe.check("same generation", follower.generation_id, resp.generation_id, new.last_request)
    probe.check("a new member id", True, resp.member_id != follower.member_id, new.last_request)
    leader.expect("the leader sees no rebalance", 0, await leader.heartbeat())
    sresp = await new.sync()
    new.expect("SyncGroup of the replacement", 0, sresp.error_code)


@scenario(
    AREA,
    faults=("static_replacement_rebalances", "no_instance_fencing"),
    requires={JOIN_GROUP: 5},
)
async def testStaticMemberFenceDuplicateRejoinedFollower(probe: Probe) -> None:
    _, follower = await _static_group(probe, 2)
    new = await _replacement(probe, follower)
    new.expect(
        "JoinGroup of the replacement",
        0,
        (await new.join_once(wait=probe.target.reply_s)).error_code,
    )
    code = await follower.heartbeat()
    follower.expect("Heartbeat of the replaced (old) member id", ErrorCode.FENCED_INSTANCE_ID, code)


@scenario(
    AREA,
    faults=("skip_assignment_ignored", "static_replacement_rebalances"),
    requires={JOIN_GROUP: 9},
)
async def testStaticLeaderRejoinSkipsAssignment(probe: Probe) -> None:
    leader, _ = await _static_group(probe, 2)
    new = await _replacement(probe, leader)
    resp = await new.join_once(version=9, wait=probe.target.reply_s)
    new.expect("JoinGroup v9 of a restarted static leader", 0, resp.error_code)
    probe.check("SkipAssignment", True, resp.skip_assignment, new.last_request)
    probe.check("it is still the leader", resp.member_id, resp.leader, new.last_request)
    probe.check("it gets the member list", 2, len(resp.members), new.last_request)


@scenario(AREA, faults=("static_members_dropped_at_completion",), requires={JOIN_GROUP: 5})
async def testStaticMemberNotRemovedWhenItMissesTheRebalance(probe: Probe) -> None:
    leader, _ = await _static_group(probe, 2, rebalance_timeout_ms=1000)
    resp = await leader.join_once(wait=1 + probe.target.reply_s)  # the follower does not rejoin
    leader.expect("JoinGroup of the leader", 0, resp.error_code)
    probe.check("the static follower stays", 2, len(resp.members), leader.last_request)


@scenario(AREA, faults=("leave_by_instance_ignored",), requires={LEAVE_GROUP: 3})
async def testLeaveGroupStaticMemberByInstanceId(probe: Probe) -> None:
    _, follower = await _static_group(probe, 2)
    admin = await _replacement(probe, follower)
    admin.member_id = ""  # an admin removes the instance without knowing its member id
    resp = await admin.leave()
    admin.expect("LeaveGroup by instance id", 0, resp.error_code)
    probe.check("per-member error", [0], [r.error_code for r in resp.members], admin.last_request)
    code = await follower.heartbeat()
    follower.expect("Heartbeat of the removed static member", ErrorCode.UNKNOWN_MEMBER_ID, code)


@scenario(AREA, faults=("no_instance_fencing",), requires={LEAVE_GROUP: 3})
async def testLeaveGroupWithFencedInstanceId(probe: Probe) -> None:
    _, follower = await _static_group(probe, 2)
    follower.member_id = "someone-else"
    resp = await follower.leave()
    codes = [r.error_code for r in resp.members]
    probe.check("per-member error", [ErrorCode.FENCED_INSTANCE_ID], codes, follower.last_request)
