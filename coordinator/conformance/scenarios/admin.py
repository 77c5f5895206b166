"""DescribeGroups, ListGroups and DeleteGroups (spec 4.3, 4.12)."""

from __future__ import annotations

from protocol.apis.delete_groups import DeleteGroupsRequest
from protocol.apis.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponseDescribedGroup,
)
from protocol.apis.list_groups import ListGroupsRequest
from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe, describe
from ..registry import scenario
from ..steps import form_group
from .offsets import fetch, simple_member

AREA = "DescribeGroups / ListGroups / DeleteGroups"
DESCRIBE, LIST, DELETE = 15, 16, 42


async def _describe(
    probe: Probe, via: Member, group_id: str
) -> tuple[DescribeGroupsResponseDescribedGroup, str]:
    version = min(probe.version(DESCRIBE), 5)  # v6 turns unknown groups into errors
    req = DescribeGroupsRequest(groups=[group_id])
    resp = await probe.within(via.conn.send(req, version), probe.target.reply_s, "DescribeGroups")
    group: DescribeGroupsResponseDescribedGroup = resp.groups[0]
    return group, describe(req, version)


async def _delete(probe: Probe, via: Member, group_id: str) -> tuple[int, str]:
    version = probe.version(DELETE)
    req = DeleteGroupsRequest(groups_names=[group_id])
    resp = await probe.within(via.conn.send(req, version), probe.target.reply_s, "DeleteGroups")
    [result] = resp.results
    return result.error_code, describe(req, version)


@scenario(AREA, faults=("describe_hides_members",), requires={DESCRIBE: 0})
async def testDescribeGroupStable(probe: Probe) -> None:
    members = await form_group(probe, 2)
    group, req = await _describe(probe, members[0], members[0].group_id)
    probe.check("error", 0, group.error_code, req)
    probe.check("state", "Stable", group.group_state, req)
    probe.check("protocol type", "consumer", group.protocol_type, req)
    probe.check("protocol", "range", group.protocol_data, req)
    got = sorted(m.member_id for m in group.members)
    probe.check("members", sorted(m.member_id for m in members), got, req)


@scenario(AREA, faults=("no_rebalance_on_leave",), requires={DESCRIBE: 0})
async def testDescribeGroupEmptyAfterEveryMemberLeft(probe: Probe) -> None:
    a, b = await form_group(probe, 2)
    a.expect("LeaveGroup", 0, (await a.leave()).error_code)
    b.expect("LeaveGroup", 0, (await b.leave()).error_code)
    group, req = await _describe(probe, a, a.group_id)
    probe.check("state once everyone left", "Empty", group.group_state, req)
    probe.check("members", 0, len(group.members), req)


@scenario(AREA, faults=("list_omits_empty_groups",), requires={LIST: 0})
async def testListGroupsIncludesStableAndEmptyGroups(probe: Probe) -> None:
    [active] = await form_group(probe, 1)
    simple = await simple_member(probe)
    probe.check("OffsetCommit", [0], await simple.commit(), simple.last_request)
    version = probe.version(LIST)
    req = ListGroupsRequest()
    resp = await probe.within(active.conn.send(req, version), probe.target.reply_s, "ListGroups")
    listed = {g.group_id for g in resp.groups}
    text = describe(req, version)
    probe.check("error", 0, resp.error_code, text)
    probe.check("the Stable group is listed", True, active.group_id in listed, text)
    probe.check("the Empty (simple) group is listed", True, simple.group_id in listed, text)


@scenario(AREA, faults=("delete_non_empty_groups",), requires={DELETE: 0})
async def testDeleteNonEmptyGroup(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    code, req = await _delete(probe, m, m.group_id)
    probe.check("DeleteGroups of a Stable group", ErrorCode.NON_EMPTY_GROUP, code, req)


@scenario(AREA, faults=("delete_reports_success_without_deleting",), requires={DELETE: 0})
async def testDeleteEmptyGroupWithStoredOffsets(probe: Probe) -> None:
    m = await simple_member(probe)
    probe.check("OffsetCommit", [0], await m.commit(offset=7), m.last_request)
    code, req = await _delete(probe, m, m.group_id)
    probe.check("DeleteGroups of an Empty group", 0, code, req)
    probe.check("its offsets are gone", [(-1, 0)], await fetch(probe, m, [0]), m.last_request)
    code, req = await _delete(probe, m, m.group_id)
    probe.check("DeleteGroups again", ErrorCode.GROUP_ID_NOT_FOUND, code, req)


@scenario(AREA, faults=("delete_groups_says_nothing",), requires={DELETE: 3})
async def testDeleteGroupsV3SaysWhyAGroupWasNotDeleted(probe: Probe) -> None:
    """DeleteGroups v3 (Kafka 4.4): each group refused carries an ErrorMessage; a deleted
    one carries none."""
    [m] = await form_group(probe, 1)
    empty = await simple_member(probe)
    probe.check("OffsetCommit", [0], await empty.commit(offset=7), empty.last_request)
    req = DeleteGroupsRequest(groups_names=[m.group_id, empty.group_id])
    resp = await probe.within(m.conn.send(req, 3), probe.target.reply_s, "DeleteGroups")
    got = {r.group_id: (r.error_code, r.error_message is not None) for r in resp.results}
    wanted = {m.group_id: (ErrorCode.NON_EMPTY_GROUP, True), empty.group_id: (0, False)}
    probe.check("each group's error and whether it says why", wanted, got, describe(req, 3))
