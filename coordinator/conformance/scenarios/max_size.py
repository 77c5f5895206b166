"""KIP-389 group.max.size (needs --max-group-size: the limit cannot be discovered)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..probe import Probe, Skipped
from ..registry import scenario
from ..steps import form_group, new_members

AREA = "KIP-389 group.max.size"
#: A larger limit would make the scenario slow; it is skipped instead.
MAX_MEMBERS_FORMED = 10


@scenario(AREA, faults=("no_max_size",))
async def testJoinGroupShouldReceiveErrorIfGroupOverMaxSize(probe: Probe) -> None:
    limit = probe.target.max_group_size
    if limit is None or limit > MAX_MEMBERS_FORMED:
        raise Skipped(f"needs --max-group-size <= {MAX_MEMBERS_FORMED} (got {limit})")
    members = await form_group(probe, limit)
    [extra] = await new_members(probe, members[0].group_id, 1)
    resp = await extra.join_once(wait=probe.target.reply_s)
    extra.expect("JoinGroup into a full group", ErrorCode.GROUP_MAX_SIZE_REACHED, resp.error_code)
    members[0].expect("the group is not disturbed", 0, await members[0].heartbeat())
