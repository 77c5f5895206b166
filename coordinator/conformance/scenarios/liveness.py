"""Session expiry and the rebalance timeout (spec 4.5, 4.10), with short timeouts so the
suite stays fast: members here use the target's minimum session timeout.

A session that short can run out for real when the host stands still (a loaded machine, a
daemon in the runner's own process): where a member that must stay alive loses its session,
the scenario checks from its own clock whether the broker could have seen a whole session
without a request of that member, and if so raises ``Stalled`` (the runner tries again)
rather than blaming the target."""

from __future__ import annotations

import asyncio
import time

from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe, Stalled
from ..registry import scenario
from ..steps import form_group, join_round, new_members, sync_round

AREA = "Session and rebalance timeouts"


def _short(probe: Probe) -> int:
    return probe.target.min_session_timeout_ms


def _stalled_if_slower(what: str, since: float, timeout_ms: int) -> None:
    """Raise ``Stalled`` if a whole timeout (a session, or a rebalance timeout) may have
    passed at the broker since ``since`` (a moment before the broker last heard from the
    member): then an expiry was right."""
    elapsed = time.monotonic() - since
    if elapsed * 1000 >= timeout_ms:
        raise Stalled(f"{what}: {elapsed * 1000:.0f} ms, timeout {timeout_ms} ms")


@scenario(AREA, faults=("no_session_expiry", "no_rebalance_on_leave"))
async def testClassicGroupMemberSessionTimeout(probe: Probe) -> None:
    session = _short(probe)
    gid = probe.group_id()
    # The leader keeps the usual session, so only the follower's can run out.
    [leader] = await new_members(probe, gid, 1)
    [follower] = await new_members(probe, gid, 1, session_timeout_ms=session)
    await leader.join_ok()
    await sync_round([leader])
    formed_from = time.monotonic()
    try:
        await join_round([leader], [follower])
        await sync_round([leader, follower])
    except AssertionError:
        _stalled_if_slower("forming the group", formed_from, session)
        raise
    # Only the leader heartbeats; the follower's session runs out and the group rebalances.
    deadline = time.monotonic() + 3 * session / 1000 + probe.target.slack_ms / 1000
    code = 0
    while time.monotonic() < deadline:
        code = await leader.heartbeat()
        if code:
            break
        await asyncio.sleep(session / 4000)
    leader.expect(
        "Heartbeat once the follower's session expired", ErrorCode.REBALANCE_IN_PROGRESS, code
    )
    resp = await leader.join_ok()
    probe.check("members after the expiry", [leader.member_id], leader.members, leader.last_request)
    probe.check("generation", follower.generation_id + 1, resp.generation_id)


async def _heartbeat_for(m: Member, seconds: float, session: int, since: float) -> None:
    """Heartbeat every quarter session for ``seconds``; every answer must be NONE unless the
    broker may have gone a whole session without hearing from ``m``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sent = time.monotonic()
        code = await m.heartbeat()
        if code:
            _stalled_if_slower("heartbeats", since, session)
        m.expect("Heartbeat within the session", 0, code)
        since = sent
        await asyncio.sleep(session / 4000)


@scenario(AREA, faults=("heartbeat_does_not_refresh_session",))
async def testClassicGroupMemberHeartbeatMaintainsSession(probe: Probe) -> None:
    session = _short(probe)
    [m] = await new_members(probe, probe.group_id(), 1, session_timeout_ms=session)
    since = time.monotonic()
    try:
        await m.join_ok()
        await sync_round([m])
    except AssertionError:
        _stalled_if_slower("forming the group", since, session)
        raise
    await _heartbeat_for(m, 3 * session / 1000, session, since)


@scenario(AREA, faults=("no_rebalance_timeout",))
async def testCompleteJoinRemoveNotYetRejoinedDynamicMembers(probe: Probe) -> None:
    rebalance_ms = 1000
    leader, follower = await form_group(probe, 2, rebalance_timeout_ms=rebalance_ms)
    # The leader rejoins, the follower never does: after the rebalance timeout the join
    # phase completes without it.
    wait = rebalance_ms / 1000 + probe.target.reply_s + probe.target.slack_ms / 1000
    rejoined = time.monotonic()
    resp = await leader.join_once(wait=wait)
    leader.expect("JoinGroup after the rebalance timeout", 0, resp.error_code)
    probe.check("the laggard is gone", [leader.member_id], leader.members, leader.last_request)
    try:
        await sync_round([leader])
    except AssertionError:
        # The sync phase has the same timeout, from the join phase's end (at least one
        # timeout after the rejoin): only a host that stood still for a whole timeout more
        # can have let it run out before the leader's SyncGroup arrived.
        _stalled_if_slower("the leader's SyncGroup", rejoined, 2 * rebalance_ms)
        raise
    code = await follower.heartbeat()
    follower.expect("Heartbeat of the removed laggard", ErrorCode.UNKNOWN_MEMBER_ID, code)


@scenario(AREA, faults=("no_session_expiry",))
async def testJoinGroupCompletionWhenPendingMemberTimesOut(probe: Probe) -> None:
    [leader] = await form_group(probe, 1)
    [pending] = await new_members(probe, leader.group_id, 1, session_timeout_ms=_short(probe))
    first = await pending.join_once()  # MEMBER_ID_REQUIRED; it never comes back
    pending.expect(
        "JoinGroup with an empty member id", ErrorCode.MEMBER_ID_REQUIRED, first.error_code
    )
    # The pending id blocks the join phase until its session timeout forgets it.
    wait = _short(probe) / 1000 + probe.target.reply_s
    resp = await leader.join_once(wait=wait)
    leader.expect("JoinGroup once the pending member expired", 0, resp.error_code)
    probe.check("members", [leader.member_id], leader.members, leader.last_request)
