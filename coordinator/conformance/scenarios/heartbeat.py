"""Heartbeat: the answer in every group state (spec 4.3)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..member import subscription
from ..probe import Probe
from ..registry import scenario
from ..steps import form_group, join_round, new_members, sync_round

AREA = "Heartbeat"


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testHeartbeatUnknownGroup(probe: Probe) -> None:
    [m] = await new_members(probe, probe.group_id(), 1)
    m.member_id, m.generation_id = "not-a-member", 1
    m.expect(
        "Heartbeat for a group that does not exist",
        ErrorCode.UNKNOWN_MEMBER_ID,
        await m.heartbeat(),
    )


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testHeartbeatUnknownMemberExistingGroup(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    code = await m.heartbeat(member_id="not-a-member")
    m.expect("Heartbeat from an unknown member", ErrorCode.UNKNOWN_MEMBER_ID, code)


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testHeartbeatEmptyGroup(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    m.expect("LeaveGroup", 0, (await m.leave()).error_code)
    code = await m.heartbeat()
    m.expect("Heartbeat into the now Empty group", ErrorCode.UNKNOWN_MEMBER_ID, code)


@scenario(AREA, faults=("skip_generation_check",))
async def testHeartbeatIllegalGeneration(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    code = await m.heartbeat(generation_id=m.generation_id + 1)
    m.expect("Heartbeat with the next generation", ErrorCode.ILLEGAL_GENERATION, code)


@scenario(AREA, faults=("heartbeat_ignores_rebalance", "ignore_metadata_change"))
async def testHeartbeatDuringPreparingRebalance(probe: Probe) -> None:
    leader, follower = await form_group(probe, 2)
    follower.protocols = [("range", subscription([probe.target.topic, "another-topic"]))]
    parked = follower.send_join()  # changed metadata: the group rebalances
    code = 0
    for _ in range(20):  # the JoinGroup may still be in flight
        code = await leader.heartbeat()
        if code:
            break
    leader.expect("Heartbeat in PreparingRebalance", ErrorCode.REBALANCE_IN_PROGRESS, code)
    await leader.join_ok()
    follower.absorb_join(
        await probe.within(parked, probe.target.reply_s, "JoinGroup of the follower")
    )
    await sync_round([leader, follower])


@scenario(AREA, faults=("heartbeat_rejects_completing_rebalance",))
async def testHeartbeatDuringCompletingRebalance(probe: Probe) -> None:
    [leader] = await form_group(probe, 1)
    [newcomer] = await new_members(probe, leader.group_id, 1)
    await join_round([leader], [newcomer])  # nobody synced yet: CompletingRebalance
    code = await newcomer.heartbeat()
    newcomer.expect("Heartbeat in CompletingRebalance", 0, code)
    await sync_round([leader, newcomer])
