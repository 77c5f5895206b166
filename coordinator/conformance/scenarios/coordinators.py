"""Finding the coordinator, and being sent to it: FindCoordinator agrees with Metadata, every
broker names the same coordinator, and a broker that is not a group's coordinator answers
its group requests NOT_COORDINATOR. The last two need several brokers (a cluster): with
one they are skipped."""

from __future__ import annotations

from protocol.apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from protocol.errors import ErrorCode

from ..probe import Probe, Skipped
from ..registry import scenario

AREA = "FindCoordinator"
FIND, METADATA, HEARTBEAT, OFFSET_FETCH = 10, 3, 12, 9

Broker = tuple[int, str, int]


async def brokers(probe: Probe) -> list[Broker]:
    conn = await probe.connect()
    version = probe.version(METADATA, at_least=1)
    meta = await probe.within(
        conn.request(MetadataRequest(topics=[]), version, MetadataResponse),
        probe.target.reply_s,
        "Metadata",
    )
    return sorted((b.node_id, b.host, b.port) for b in meta.brokers)


async def coordinator(
    probe: Probe, address: tuple[str, int], group: str
) -> FindCoordinatorResponse:
    conn = await probe.connect(address=address)
    version = min(probe.version(FIND), 3)  # one key per request
    return await probe.within(
        conn.request(FindCoordinatorRequest(key=group), version, FindCoordinatorResponse),
        probe.target.reply_s,
        f"FindCoordinator({group})",
    )


@scenario(AREA, faults=("find_coordinator_unknown_node",))
async def testFindCoordinatorNamesABrokerFromMetadata(probe: Probe) -> None:
    listed = await brokers(probe)
    group = probe.group_id()
    found = await coordinator(probe, (probe.target.host, probe.target.port), group)
    probe.check_error("FindCoordinator", ErrorCode.NONE, found.error_code)
    probe.check(
        "the coordinator is a broker Metadata lists, at the same address",
        True,
        (found.node_id, found.host, found.port) in listed,
    )


@scenario(AREA, faults=("every_node_names_itself",))
async def testEveryBrokerNamesTheSameCoordinator(probe: Probe) -> None:
    listed = await brokers(probe)
    if len(listed) < 2:
        raise Skipped("one broker: nothing to agree on")
    for label in ("a", "b", "c", "d"):
        group = probe.group_id(label)
        answers = {
            node: (await coordinator(probe, (host, port), group)).node_id
            for node, host, port in listed
        }
        probe.check(
            f"the coordinator of {group}, asked at every broker", 1, len(set(answers.values()))
        )


@scenario(AREA, faults=("every_node_coordinates",))
async def testGroupRequestAtAnotherBrokerIsNotCoordinator(probe: Probe) -> None:
    listed = await brokers(probe)
    if len(listed) < 2:
        raise Skipped("one broker: every group is its own")
    group = probe.group_id()
    found = await coordinator(probe, (probe.target.host, probe.target.port), group)
    probe.check_error("FindCoordinator", ErrorCode.NONE, found.error_code)
    node, host, port = next(b for b in listed if b[0] != found.node_id)
    conn = await probe.connect(address=(host, port))
    beat = HeartbeatRequest(group_id=group, generation_id=1, member_id="m")
    version = probe.version(HEARTBEAT)
    answer = await probe.within(
        conn.request(beat, version, HeartbeatResponse), probe.target.reply_s, "Heartbeat"
    )
    probe.check_error(
        f"Heartbeat at broker {node}, not the coordinator", ErrorCode.NOT_COORDINATOR,
        answer.error_code, beat, version,
    )  # fmt: skip
    fetch = OffsetFetchRequest(group_id=group, topics=None)
    version = min(probe.version(OFFSET_FETCH, at_least=2), 7)  # v2-7: one group, top error
    fetched = await probe.within(
        conn.request(fetch, version, OffsetFetchResponse), probe.target.reply_s, "OffsetFetch"
    )
    probe.check_error(
        f"OffsetFetch at broker {node}, not the coordinator", ErrorCode.NOT_COORDINATOR,
        fetched.error_code, fetch, version,
    )  # fmt: skip
