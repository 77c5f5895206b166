"""When a JoinGroup from a known member rebalances the group, and when it must not."""

from __future__ import annotations

import asyncio

from protocol.errors import ErrorCode

from ..member import subscription
from ..probe import Probe
from ..registry import scenario
from ..steps import form_group, join_round, new_members, sync_round, wait_for_heartbeat_error

AREA = "JoinGroup rebalance triggers"


@scenario(AREA, faults=("rebalance_on_unchanged_rejoin",))
async def testJoinGroupFromUnchangedFollowerDoesNotRebalance(probe: Probe) -> None:
    leader, follower = await form_group(probe, 2)
    generation = follower.generation_id
    resp = await follower.join_once(wait=probe.target.reply_s)
    follower.expect("JoinGroup of an unchanged follower in Stable", 0, resp.error_code)
    probe.check("generation unchanged", generation, resp.generation_id, follower.last_request)
    leader.expect("Heartbeat of the leader afterwards", 0, await leader.heartbeat())


@scenario(AREA, faults=("ignore_metadata_change", "no_rebalance_on_join"))
async def testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance(probe: Probe) -> None:
    leader, follower = await form_group(probe, 2)
    generation = leader.generation_id
    follower.protocols = [("range", subscription([probe.target.topic, "another-topic"]))]
    parked = follower.send_join()
    await wait_for_heartbeat_error(leader, ErrorCode.REBALANCE_IN_PROGRESS)
    resp = await leader.join_ok()
    follower.absorb_join(
        await probe.within(parked, probe.target.reply_s, "JoinGroup of the follower")
    )
    probe.check("a new generation", generation + 1, resp.generation_id, leader.last_request)
    await sync_round([leader, follower])


@scenario(AREA, faults=("no_rebalance_on_join",))
async def testJoinGroupFromUnchangedLeaderShouldRebalance(probe: Probe) -> None:
    leader, follower = await form_group(probe, 2)
    parked = leader.send_join()
    await wait_for_heartbeat_error(follower, ErrorCode.REBALANCE_IN_PROGRESS)
    await follower.join_ok()
    leader.absorb_join(await probe.within(parked, probe.target.reply_s, "JoinGroup of the leader"))
    probe.check("both in the new generation", follower.generation_id, leader.generation_id)


@scenario(AREA, faults=("no_rebalance_on_join", "generation_not_incremented"))
async def testRebalanceOnNewMemberJoin(probe: Probe) -> None:
    members = await form_group(probe, 2)
    generation = members[0].generation_id
    [third] = await new_members(probe, members[0].group_id, 1)
    everyone = await join_round(members, [third])
    probe.check("generation after a member joined", generation + 1, third.generation_id)
    probe.check("the leader sees three members", 3, len(members[0].members))
    await sync_round(everyone)


@scenario(AREA, faults=("no_rebalance_on_leave",))
async def testRebalanceOnLeave(probe: Probe) -> None:
    a, b, c = await form_group(probe, 3)
    c.expect("LeaveGroup", 0, (await c.leave()).error_code)
    await wait_for_heartbeat_error(a, ErrorCode.REBALANCE_IN_PROGRESS)
    responses = await asyncio.gather(a.join_ok(), b.join_ok())
    probe.check("one generation", responses[0].generation_id, responses[1].generation_id)
    probe.check("members left", sorted([a.member_id, b.member_id]), sorted(a.members))
