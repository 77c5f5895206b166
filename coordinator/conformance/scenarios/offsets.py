"""OffsetCommit / OffsetFetch rules by group state and generation (spec 4.4, 4.12)."""

from __future__ import annotations

from protocol.apis.offset_commit import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from protocol.errors import ErrorCode

from ..member import Member
from ..probe import Probe, describe
from ..registry import scenario
from ..steps import form_group, join_round, new_members

AREA = "OffsetCommit / OffsetFetch"
OFFSET_FETCH = 9


async def fetch(probe: Probe, member: Member, partitions: list[int]) -> list[tuple[int, int]]:
    """(offset, error) per partition, as OffsetFetch reports them."""
    version = probe.version(OFFSET_FETCH, at_least=1)
    topic = probe.target.topic
    if version >= 8:
        req = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=member.group_id,
                    topics=[OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)],
                )
            ]
        )
    else:
        req = OffsetFetchRequest(
            group_id=member.group_id,
            topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
        )
    member.last = (req, version)
    resp = await probe.within(member.conn.send(req, version), probe.target.reply_s, "OffsetFetch")
    if version >= 8:
        [group] = resp.groups
        probe.check("group-level error", 0, group.error_code, describe(req, version))
        rows = [p for t in group.topics for p in t.partitions]
    else:
        rows = [p for t in resp.topics for p in t.partitions]
    return [(p.committed_offset, p.error_code) for p in rows]


async def simple_member(probe: Probe) -> Member:
    """A member outside group management: commits with generation -1 and no member id."""
    [m] = await new_members(probe, probe.group_id("simple"), 1)
    return m


@scenario(AREA, faults=("fetch_unknown_as_zero",))
async def testSimpleGroupOffsetCommitAndFetch(probe: Probe) -> None:
    m = await simple_member(probe)
    codes = await m.commit(offset=42, partitions=[0])
    probe.check("OffsetCommit outside group management", [0], codes, m.last_request)
    got = await fetch(probe, m, [0, 1])
    probe.check("committed and never-committed partitions", [(42, 0), (-1, 0)], got, m.last_request)


@scenario(AREA, faults=("fetch_unknown_as_zero",))
async def testFetchOffsetsWithUnknownGroup(probe: Probe) -> None:
    m = await simple_member(probe)
    got = await fetch(probe, m, [0])
    probe.check("OffsetFetch of a group that does not exist", [(-1, 0)], got, m.last_request)


@scenario(AREA, faults=("skip_generation_check",))
async def testOffsetCommitWithIllegalGeneration(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    codes = await m.commit(generation_id_or_member_epoch=m.generation_id + 1)
    probe.check(
        "OffsetCommit with the next generation",
        [ErrorCode.ILLEGAL_GENERATION],
        codes,
        m.last_request,
    )


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testOffsetCommitWithUnknownMemberId(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    codes = await m.commit(member_id="not-a-member")
    probe.check(
        "OffsetCommit from an unknown member", [ErrorCode.UNKNOWN_MEMBER_ID], codes, m.last_request
    )


@scenario(AREA, faults=("unknown_member_answered_ok",))
async def testOffsetCommitWithoutMemberIdAndGenerationToActiveGroup(probe: Probe) -> None:
    [m] = await form_group(probe, 1)
    codes = await m.commit(generation_id_or_member_epoch=-1, member_id="", group_instance_id=None)
    probe.check(
        "OffsetCommit without identity into a Stable group",
        [ErrorCode.UNKNOWN_MEMBER_ID],
        codes,
        m.last_request,
    )


@scenario(AREA, faults=("commit_ignores_rebalance",))
async def testOffsetCommitWhileInCompletingRebalanceState(probe: Probe) -> None:
    [leader] = await form_group(probe, 1)
    [newcomer] = await new_members(probe, leader.group_id, 1)
    await join_round([leader], [newcomer])  # nobody synced: CompletingRebalance
    codes = await leader.commit()
    probe.check(
        "OffsetCommit in CompletingRebalance",
        [ErrorCode.REBALANCE_IN_PROGRESS],
        codes,
        leader.last_request,
    )


@scenario(AREA, faults=("skip_generation_check",))
async def testOffsetCommitFromStableMember(probe: Probe) -> None:
    members = await form_group(probe, 2)
    for i, m in enumerate(members):
        probe.check(
            "OffsetCommit of a Stable member",
            [0],
            await m.commit(offset=10 + i, partitions=[i]),
            m.last_request,
        )
    got = await fetch(probe, members[0], [0, 1])
    probe.check("offsets read back", [(10, 0), (11, 0)], got)
    # A stale generation must not overwrite them.
    stale = await members[0].commit(
        offset=99, generation_id_or_member_epoch=members[0].generation_id - 1
    )
    probe.check("OffsetCommit of the previous generation", [ErrorCode.ILLEGAL_GENERATION], stale)


@scenario(AREA, faults=("metadata_size_unchecked",))
async def testOffsetMetadataTooLarge(probe: Probe) -> None:
    m = await simple_member(probe)
    big = "x" * 4097  # offset.metadata.max.bytes defaults to 4096
    topics = [
        OffsetCommitRequestTopic(
            name=probe.target.topic,
            partitions=[
                OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=1, committed_metadata=big
                )
            ],
        )
    ]
    codes = await m.commit(topics=topics)
    probe.check(
        "OffsetCommit with 4097 characters of metadata",
        [ErrorCode.OFFSET_METADATA_TOO_LARGE],
        codes,
        m.last_request,
    )
