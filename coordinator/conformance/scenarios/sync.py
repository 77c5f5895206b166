"""SyncGroup: the leader's assignment reaches every member, whoever syncs first."""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe
from ..registry import scenario
from ..steps import form_group, join_round, new_members, wait_for_heartbeat_error

AREA = "SyncGroup"
SYNC_GROUP = 14


async def _joined_pair(probe: Probe, **kwargs: Any) -> tuple[Member, Member]:
    """Leader and follower with their JoinGroup answered: the group is CompletingRebalance."""
    [leader] = await form_group(probe, 1, **kwargs)
    [follower] = await new_members(probe, leader.group_id, 1, **kwargs)
    await join_round([leader], [follower])
    return leader, follower


@scenario(AREA, faults=("drop_assignments",))
async def testSyncGroupFollowerAfterLeader(probe: Probe) -> None:
    leader, follower = await _joined_pair(probe)
    plan = leader.assign_all()
    lresp = await leader.sync(plan)
    leader.expect("SyncGroup of the leader", 0, lresp.error_code)
    fresp = await follower.sync()
    follower.expect("SyncGroup of the follower", 0, fresp.error_code)
    probe.check(
        "the follower receives what the leader assigned it",
        plan[follower.member_id],
        fresp.assignment,
        follower.last_request,
    )


@scenario(AREA, faults=("drop_assignments", "sync_answers_without_waiting"))
async def testSyncGroupLeaderAfterFollower(probe: Probe) -> None:
    leader, follower = await _joined_pair(probe)
    parked = follower.send_sync()
    await asyncio.sleep(0.3)
    if parked.done():
        probe.fail(
            "a follower's SyncGroup was answered before the leader's",
            follower.last_request,
            "parked until the leader syncs",
            repr(parked.result()),
        )
    plan = leader.assign_all()
    lresp = await leader.sync(plan)
    leader.expect("SyncGroup of the leader", 0, lresp.error_code)
    fresp = await probe.within(parked, probe.target.reply_s, "parked SyncGroup of the follower")
    probe.check("the follower's assignment", plan[follower.member_id], fresp.assignment)


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testSyncGroupFromUnknownMember(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    resp = await m.sync(member_id="not-a-member")
    m.expect("SyncGroup from an unknown member", ErrorCode.UNKNOWN_MEMBER_ID, resp.error_code)


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testSyncGroupFromUnknownGroup(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    m.member_id, m.generation_id, m.protocol_name = "not-a-member", 1, "range"
    resp = await m.sync()
    m.expect(
        "SyncGroup for a group that does not exist", ErrorCode.UNKNOWN_MEMBER_ID, resp.error_code
    )


@scenario(AREA, faults=("skip_generation_check",))
async def testSyncGroupFromIllegalGeneration(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    resp = await m.sync(generation_id=m.generation_id + 1)
    m.expect("SyncGroup with the next generation", ErrorCode.ILLEGAL_GENERATION, resp.error_code)


@scenario(AREA, faults=("sync_skips_protocol_check",), requires={SYNC_GROUP: 5})
async def testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    resp = await m.sync(protocol_name="roundrobin")
    m.expect(
        "SyncGroup v5+ naming another protocol",
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        resp.error_code,
    )


@scenario(AREA, faults=("no_sync_timeout",))
async def testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers(probe: Probe) -> None:
    leader, follower = await _joined_pair(probe, rebalance_timeout_ms=1000)
    lresp = await leader.sync(leader.assign_all())
    leader.expect("SyncGroup of the leader", 0, lresp.error_code)
    # The follower never syncs: after the rebalance timeout it is removed and the group
    # rebalances without it.
    await wait_for_heartbeat_error(leader, ErrorCode.REBALANCE_IN_PROGRESS)
    code = await follower.heartbeat()
    follower.expect("Heartbeat of the removed follower", ErrorCode.UNKNOWN_MEMBER_ID, code)
