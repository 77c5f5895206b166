"""Raw-wire helpers shared by the tests that check what a daemon remembers."""

from __future__ import annotations

from scramp import ScramClient

from coordinator.client.connection import KafkaConnectionClient
from protocol.apis.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.apis.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse
from protocol.errors import ErrorCode

Offsets = dict[tuple[str, int], tuple[int, str | None]]


async def commit(c: KafkaConnectionClient, group: str, offsets: Offsets) -> None:
    """A simple-consumer commit (no generation); raises unless every partition is NONE."""
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        by_topic.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    resp = await c.request(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()],
        ),
        8,
        OffsetCommitResponse,
    )
    errors = {p.error_code for t in resp.topics for p in t.partitions}
    assert errors == {0}, errors


async def fetch(c: KafkaConnectionClient, group: str) -> Offsets:
    """Every committed offset of ``group`` (OffsetFetch v8, all topics)."""
    resp = await c.request(
        OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)]),
        8,
        OffsetFetchResponse,
    )
    [g] = resp.groups
    assert g.error_code == ErrorCode.NONE, g.error_code
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata)
        for t in g.topics
        for p in t.partitions
        if p.committed_offset >= 0
    }


async def join_static_leader(
    c: KafkaConnectionClient, group: str, instance_id: str, assignment: bytes
) -> tuple[str, int]:
    """Join as the only (static) member, assign ``assignment`` to itself; (member id, gen)."""
    join = await c.request(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=30000,
            rebalance_timeout_ms=30000,
            member_id="",
            group_instance_id=instance_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00")],
        ),
        7,
        JoinGroupResponse,
    )
    assert join.error_code == ErrorCode.NONE, join.error_code
    assert join.leader == join.member_id
    sync = await c.request(
        SyncGroupRequest(
            group_id=group,
            generation_id=join.generation_id,
            member_id=join.member_id,
            group_instance_id=instance_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                SyncGroupRequestAssignment(member_id=join.member_id, assignment=assignment)
            ],
        ),
        5,
        SyncGroupResponse,
    )
    assert sync.error_code == ErrorCode.NONE and sync.assignment == assignment
    return join.member_id, join.generation_id


async def heartbeat(
    c: KafkaConnectionClient, group: str, member_id: str, generation: int, instance_id: str
) -> int:
    resp = await c.request(
        HeartbeatRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        ),
        4,
        HeartbeatResponse,
    )
    return resp.error_code


async def describe(c: KafkaConnectionClient, group: str) -> DescribeGroupsResponse:
    return await c.request(DescribeGroupsRequest(groups=[group]), 5, DescribeGroupsResponse)


async def sasl_login(
    c: KafkaConnectionClient, user: str, password: str, mechanism: str = "SCRAM-SHA-512"
) -> SaslAuthenticateResponse:
    """SaslHandshake v1 then SaslAuthenticate v2 (PLAIN or SCRAM); the last response."""
    hs = await c.request(SaslHandshakeRequest(mechanism=mechanism), 1, SaslHandshakeResponse)
    assert hs.error_code == ErrorCode.NONE, hs
    if mechanism == "PLAIN":
        token = f"\0{user}\0{password}".encode()
        return await c.request(
            SaslAuthenticateRequest(auth_bytes=token), 2, SaslAuthenticateResponse
        )
    scram = ScramClient([mechanism], user, password)
    first = await c.request(
        SaslAuthenticateRequest(auth_bytes=scram.get_client_first().encode()),
        2,
        SaslAuthenticateResponse,
    )
    if first.error_code:
        return first
    scram.set_server_first(first.auth_bytes.decode())
    final = await c.request(
        SaslAuthenticateRequest(auth_bytes=scram.get_client_final().encode()),
        2,
        SaslAuthenticateResponse,
    )
    if final.error_code == ErrorCode.NONE:
        scram.set_server_final(final.auth_bytes.decode())  # the server proved it has the key
    return final
