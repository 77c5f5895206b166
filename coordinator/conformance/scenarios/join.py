"""JoinGroup basics: validation, KIP-394 member ids, leader, generation, protocol choice."""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..member import subscription
from ..probe import Probe
from ..registry import scenario
from ..steps import form_group, join_round, new_members, sync_round, wait_for_heartbeat_error

AREA = "JoinGroup"
KIP394 = "KIP-394 member id required"
JOIN_GROUP = 11


@scenario(KIP394, faults=("no_member_id_required",), requires={JOIN_GROUP: 4})
async def testJoinGroupMemberIdRequired(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    resp = await m.join_once()
    m.expect("JoinGroup v4+ with an empty member id", ErrorCode.MEMBER_ID_REQUIRED, resp.error_code)
    probe.check("a member id is handed out", True, bool(resp.member_id), m.last_request)
    probe.check("generation of a MEMBER_ID_REQUIRED answer", -1, resp.generation_id)
    again = await m.join_once()
    m.expect("JoinGroup with the handed-out id", 0, again.error_code)
    probe.check("the handed-out id is kept", resp.member_id, again.member_id, m.last_request)


@scenario(AREA, faults=("unknown_member_joins_new_group",))
async def testJoinGroupUnknownConsumerNewGroup(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    resp = await m.join_once(member_id="not-a-member")
    m.expect(
        "JoinGroup of an unknown member id into a new group",
        ErrorCode.UNKNOWN_MEMBER_ID,
        resp.error_code,
    )


@scenario(AREA, faults=("latest_joiner_leads", "no_rebalance_on_join"))
async def testFirstJoinerIsLeader(probe: Probe) -> None:
    members = await form_group(probe, 3)
    first = members[0]
    for m in members:
        probe.check(f"leader seen by {m.member_id}", first.member_id, m.leader)
    probe.check("the leader's JoinGroup lists every member", 3, len(first.members))


@scenario(AREA, faults=("generation_not_incremented",))
async def testGenerationIdIncrementsOnRebalance(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    probe.check("the first generation a member sees", 1, m.generation_id, m.last_request)
    resp = await m.join_ok()  # a leader's JoinGroup always rebalances
    probe.check("generation after a rebalance", 2, resp.generation_id, m.last_request)


@scenario(AREA, faults=("no_leader_reelection", "no_rebalance_on_leave"))
async def testLeaderReelectedWhenLeaderLeaves(probe: Probe) -> None:
    leader, follower = await form_group(probe, 2)
    left = await leader.leave()
    leader.expect("LeaveGroup of the leader", 0, left.error_code)
    await wait_for_heartbeat_error(follower, ErrorCode.REBALANCE_IN_PROGRESS)
    resp = await follower.join_ok()
    probe.check("new leader", follower.member_id, resp.leader, follower.last_request)
    probe.check("members of the new generation", [follower.member_id], follower.members)
    await sync_round([follower])


@scenario(AREA, faults=("ignore_protocol_mismatch",))
async def testJoinGroupInconsistentProtocolType(probe: Probe) -> None:
    [first] = await form_group(probe, 1)
    [other] = await new_members(probe, first.group_id, 1, protocol_type="connect")
    resp = await other.join_once()
    other.expect(
        "JoinGroup with another protocol type",
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        resp.error_code,
    )


@scenario(AREA, faults=("ignore_protocol_mismatch",))
async def testJoinGroupInconsistentGroupProtocol(probe: Probe) -> None:
    [first] = await form_group(probe, 1)
    [other] = await new_members(
        probe, first.group_id, 1, protocols=[("roundrobin", subscription([probe.target.topic]))]
    )
    resp = await other.join_once()
    other.expect(
        "JoinGroup sharing no protocol with the group",
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        resp.error_code,
    )


@scenario(AREA, faults=("ignore_protocol_mismatch",))
async def testJoinGroupWithEmptyProtocolType(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1, protocol_type="")
    resp = await m.join_once()
    m.expect(
        'JoinGroup with protocol type ""', ErrorCode.INCONSISTENT_GROUP_PROTOCOL, resp.error_code
    )


@scenario(AREA, faults=("ignore_protocol_mismatch",))
async def testJoinGroupWithEmptyGroupProtocol(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    resp = await m.join_once(protocols=[])
    m.expect("JoinGroup with no protocols", ErrorCode.INCONSISTENT_GROUP_PROTOCOL, resp.error_code)


@scenario(AREA, faults=("leader_protocol_wins",))
async def testProtocolSelectedByMajorityVote(probe: Probe) -> None:
    meta = subscription([probe.target.topic])
    gid = probe.group_id()
    [first] = await new_members(probe, gid, 1, protocols=[("roundrobin", meta), ("range", meta)])
    await first.join_ok()
    await sync_round([first])
    others = await new_members(probe, gid, 2, protocols=[("range", meta), ("roundrobin", meta)])
    everyone = await join_round([first], others)
    for m in everyone:
        probe.check("protocol chosen by two votes to one", "range", m.protocol_name)


@scenario(AREA, faults=("no_session_timeout_check",))
async def testJoinGroupSessionTimeoutTooSmall(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    resp = await m.join_once(session_timeout_ms=probe.target.min_session_timeout_ms - 1)
    m.expect(
        "JoinGroup below group.min.session.timeout.ms",
        ErrorCode.INVALID_SESSION_TIMEOUT,
        resp.error_code,
    )


@scenario(AREA, faults=("no_session_timeout_check",))
async def testJoinGroupSessionTimeoutTooLarge(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    resp = await m.join_once(session_timeout_ms=probe.target.max_session_timeout_ms + 1)
    m.expect(
        "JoinGroup above group.max.session.timeout.ms",
        ErrorCode.INVALID_SESSION_TIMEOUT,
        resp.error_code,
    )
