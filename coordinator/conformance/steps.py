"""Multi-member steps scenarios share: forming a Stable group, a full rebalance round."""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.errors import ErrorCode

from .member import Member
from .probe import Probe

#: Polls for a state change (e.g. "the rebalance has started") are bounded in count.
POLLS = 50
POLL_INTERVAL_S = 0.1


async def new_members(probe: Probe, group_id: str, n: int, **kwargs: Any) -> list[Member]:
    """``n`` members of one group, each on its own connection."""
    members = []
    for i in range(n):
        conn = await probe.connect(f"conformance-{i}")
        members.append(Member(probe, conn, group_id, **kwargs))
    return members


async def sync_round(members: list[Member]) -> dict[str, bytes]:
    """Everyone syncs, the leader with an assignment for all; returns what each received."""
    futures = []
    for m in members:
        is_leader = m.member_id == m.leader
        futures.append(m.send_sync(m.assign_all() if is_leader else {}))
    probe = members[0].probe
    responses = await probe.within(
        asyncio.gather(*futures), probe.target.reply_s, "SyncGroup round"
    )
    for m, resp in zip(members, responses, strict=True):
        m.expect("SyncGroup in a rebalance round", 0, resp.error_code)
    return {m.member_id: r.assignment for m, r in zip(members, responses, strict=True)}


async def wait_for_heartbeat_error(member: Member, expected: int) -> None:
    """Heartbeat until the broker answers ``expected`` (bounded)."""
    last = 0
    for _ in range(POLLS):
        last = await member.heartbeat()
        if last == expected:
            return
        await asyncio.sleep(POLL_INTERVAL_S)
    member.expect(f"Heartbeat never answered {expected}", expected, last)


async def join_round(existing: list[Member], newcomers: list[Member]) -> list[Member]:
    """Newcomers join a Stable group (or form one); existing members rejoin when told to.
    Returns every member, all in the same new generation with their JoinGroup answered."""
    probe = (existing or newcomers)[0].probe
    # KIP-394 first step first, so no pending id can arrive after the others completed.
    pending = []
    for m in newcomers:
        if m.instance_id is not None:
            pending.append(m)  # static members are never asked for a member id
            continue
        resp = await m.join_once()
        if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            pending.append(m)
        else:
            m.expect(
                "JoinGroup with an empty member id", ErrorCode.MEMBER_ID_REQUIRED, resp.error_code
            )
    futures = [m.send_join() for m in pending]
    if existing:
        await wait_for_heartbeat_error(existing[0], ErrorCode.REBALANCE_IN_PROGRESS)
        futures += [m.send_join() for m in existing]
    everyone = pending + existing
    wait = probe.target.join_wait_s + probe.target.reply_s
    responses = await probe.within(asyncio.gather(*futures), wait, "JoinGroup round")
    for m, resp in zip(everyone, responses, strict=True):
        m.absorb_join(resp)
        m.expect("JoinGroup in a rebalance round", 0, resp.error_code)
    generations = {m.generation_id for m in everyone}
    probe.check("one generation for every member of the round", 1, len(generations))
    return everyone


async def form_group(
    probe: Probe, n: int, group_id: str | None = None, **kwargs: Any
) -> list[Member]:
    """A Stable group of ``n`` members; the first is the leader (it joined first)."""
    gid = group_id or probe.group_id()
    members = await new_members(probe, gid, n, **kwargs)
    first = members[0]
    await first.join_ok()
    await sync_round([first])
    if n > 1:
        await join_round([first], members[1:])
        await sync_round(members)
    return members
