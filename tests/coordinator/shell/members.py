"""Group members made over the wire, for tests that then send their requests as frames."""

from __future__ import annotations

from coordinator.client.connection import KafkaConnectionClient
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse


async def stable_classic_member(c: KafkaConnectionClient, group_id: str) -> tuple[str, int]:
    """A member alone in classic group ``group_id``, joined and synced (60 s session):
    its member id and generation."""

    def join(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=60_000,
            rebalance_timeout_ms=60_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )

    first = await c.request(join(""), 5, JoinGroupResponse)
    joined = await c.request(join(first.member_id), 5, JoinGroupResponse)
    assert joined.error_code == 0, joined
    sync = SyncGroupRequest(
        group_id=group_id, generation_id=joined.generation_id, member_id=first.member_id
    )
    assert (await c.request(sync, 3, SyncGroupResponse)).error_code == 0
    return first.member_id, joined.generation_id
