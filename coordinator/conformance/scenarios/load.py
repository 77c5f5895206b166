"""Many groups rebalancing at once, many members sharing a connection: no spurious errors
(the peers' worst bugs: UNKNOWN_MEMBER_ID and stuck rebalances under concurrency)."""

from __future__ import annotations

import asyncio

from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe
from ..registry import scenario
from ..steps import form_group, sync_round, wait_for_heartbeat_error

AREA = "Concurrency"
GROUPS = 20
MEMBERS = 3


async def _second_round(members: list[Member]) -> None:
    """Every member rejoins at once (the leader's rejoin starts the rebalance)."""
    leader = members[0]
    first = leader.send_join()
    await wait_for_heartbeat_error(members[1], ErrorCode.REBALANCE_IN_PROGRESS)
    futures = [first] + [m.send_join() for m in members[1:]]
    responses = await leader.probe.within(
        asyncio.gather(*futures), 2 * leader.probe.target.reply_s, "JoinGroup round"
    )
    for m, resp in zip(members, responses, strict=True):
        m.absorb_join(resp)
        m.expect("JoinGroup during concurrent rebalances", 0, resp.error_code)
    await sync_round(members)


@scenario(AREA, faults=("generation_not_incremented", "drop_assignments"))
async def testConcurrentRebalancesOfManyGroups(probe: Probe) -> None:
    groups = await probe.within(
        asyncio.gather(*(form_group(probe, MEMBERS) for _ in range(GROUPS))),
        4 * probe.target.reply_s,
        "forming groups",
    )
    await probe.within(
        asyncio.gather(*(_second_round(g) for g in groups)),
        4 * probe.target.reply_s,
        "second round",
    )
    for members in groups:
        for m in members:
            probe.check("generation after two rebalances", 3, m.generation_id, m.last_request)
        assignments = await sync_round(members)
        probe.check("everyone got an assignment", True, all(assignments.values()))


@scenario(AREA, faults=("no_rebalance_on_leave", "skip_generation_check"))
async def testManyMembersPerConnection(probe: Probe) -> None:
    members = await form_group(probe, 6)
    shared = await probe.connect("conformance-shared")
    for m in members:
        m.conn = shared  # from here on every request goes over one connection, pipelined
    codes = await asyncio.gather(*(m.heartbeat() for m in members))
    probe.check("pipelined heartbeats of six members", [0] * 6, list(codes))
    stale = await asyncio.gather(*(m.heartbeat(generation_id=m.generation_id - 1) for m in members))
    probe.check("stale generations", [ErrorCode.ILLEGAL_GENERATION] * 6, list(stale))
    left = await asyncio.gather(*(m.leave() for m in members[3:]))
    probe.check("leaves", [0, 0, 0], [r.error_code for r in left])
    after = await asyncio.gather(*(m.heartbeat() for m in members))
    expected = [ErrorCode.REBALANCE_IN_PROGRESS] * 3 + [ErrorCode.UNKNOWN_MEMBER_ID] * 3
    probe.check("heartbeats after three left", expected, list(after))
