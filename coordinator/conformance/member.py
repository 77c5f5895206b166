"""A scripted group member: one connection (a parked JoinGroup blocks it, as in Kafka) and
one method per request, so scenarios read as the sequence of requests they send."""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.apis import ApiKey
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from protocol.apis.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
)
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse
from protocol.consumer import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode
from protocol.schema import Struct

from ..client.connection import KafkaConnectionClient
from .probe import Probe, describe, error_name


def subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    return encode_subscription(ConsumerProtocolSubscription(topics=topics, user_data=user_data), 0)


def assignment(topic: str, partitions: list[int]) -> bytes:
    return encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=[TopicPartition(topic=topic, partitions=partitions)]
        ),
        0,
    )


class Member:
    def __init__(
        self,
        probe: Probe,
        conn: KafkaConnectionClient,
        group_id: str,
        *,
        instance_id: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        session_timeout_ms: int | None = None,
        rebalance_timeout_ms: int = 10000,
        protocol_type: str = CONSUMER_PROTOCOL_TYPE,
    ) -> None:
        self.probe = probe
        self.conn = conn
        self.group_id = group_id
        self.instance_id = instance_id
        self.protocols = protocols or [("range", subscription([probe.target.topic]))]
        self.session_timeout_ms = session_timeout_ms or probe.target.session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocol_type = protocol_type
        self.member_id = ""
        self.generation_id = -1
        self.leader = ""
        self.protocol_name: str | None = None
        self.members: list[str] = []  # as the leader's JoinGroup response listed them
        self.last: tuple[Struct, int] | None = None  # last request sent, for failure reports

    @property
    def last_request(self) -> str:
        return describe(*self.last) if self.last else ""

    def _send(self, body: Struct, version: int) -> asyncio.Future[Any]:
        self.last = (body, version)
        return self.conn.send(body, version)

    # -- JoinGroup ----------------------------------------------------------------------------

    def join_request(self, member_id: str | None = None, **overrides: Any) -> JoinGroupRequest:
        fields: dict[str, Any] = {
            "group_id": self.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": self.member_id if member_id is None else member_id,
            "group_instance_id": self.instance_id,
            "protocol_type": self.protocol_type,
            "protocols": [JoinGroupRequestProtocol(name=n, metadata=m) for n, m in self.protocols],
        }
        fields.update(overrides)
        return JoinGroupRequest(**fields)

    def send_join(self, version: int | None = None, **overrides: Any) -> asyncio.Future[Any]:
        """Send one JoinGroup; the response may park, so this returns the future."""
        v = self.probe.version(ApiKey.JOIN_GROUP, version)
        return self._send(self.join_request(**overrides), v)

    def absorb_join(self, resp: JoinGroupResponse) -> JoinGroupResponse:
        if resp.error_code in (0, ErrorCode.MEMBER_ID_REQUIRED) and resp.member_id:
            self.member_id = resp.member_id
        if resp.error_code == 0:
            self.generation_id = resp.generation_id
            self.leader = resp.leader
            self.protocol_name = resp.protocol_name
            self.members = [m.member_id for m in resp.members]
        return resp

    async def join_once(
        self, version: int | None = None, wait: float | None = None, **overrides: Any
    ) -> JoinGroupResponse:
        fut = self.send_join(version, **overrides)
        seconds = (
            wait if wait is not None else self.probe.target.join_wait_s + self.probe.target.reply_s
        )
        resp: JoinGroupResponse = await self.probe.within(fut, seconds, "JoinGroup")
        return self.absorb_join(resp)

    async def join(
        self, version: int | None = None, wait: float | None = None, **overrides: Any
    ) -> JoinGroupResponse:
        """JoinGroup, repeating it once with the returned id on MEMBER_ID_REQUIRED."""
        resp = await self.join_once(version, wait, **overrides)
        if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            overrides.pop("member_id", None)
            resp = await self.join_once(version, wait, **overrides)
        return resp

    async def join_ok(self, version: int | None = None, **overrides: Any) -> JoinGroupResponse:
        resp = await self.join(version, **overrides)
        self.probe.check_error("JoinGroup", 0, resp.error_code, *self.last or (None, 0))
        return resp

    # -- SyncGroup ----------------------------------------------------------------------------

    def send_sync(
        self,
        assignments: dict[str, bytes] | None = None,
        version: int | None = None,
        **overrides: Any,
    ) -> asyncio.Future[Any]:
        v = self.probe.version(ApiKey.SYNC_GROUP, version)
        fields: dict[str, Any] = {
            "group_id": self.group_id,
            "generation_id": self.generation_id,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "assignments": [
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        }
        fields.update(overrides)
        return self._send(SyncGroupRequest(**fields), v)

    async def sync(
        self,
        assignments: dict[str, bytes] | None = None,
        version: int | None = None,
        wait: float | None = None,
        **overrides: Any,
    ) -> SyncGroupResponse:
        fut = self.send_sync(assignments, version, **overrides)
        resp: SyncGroupResponse = await self.probe.within(
            fut, self.probe.target.reply_s if wait is None else wait, "SyncGroup"
        )
        return resp

    def assign_all(self) -> dict[str, bytes]:
        """The leader's assignment: partition i of the topic to the i-th member, round robin."""
        n = self.probe.target.topic_partitions
        members = self.members
        return {
            m: assignment(self.probe.target.topic, list(range(i, n, len(members))))
            for i, m in enumerate(members)
        }

    # -- the rest -----------------------------------------------------------------------------

    async def heartbeat(self, version: int | None = None, **overrides: Any) -> int:
        v = self.probe.version(ApiKey.HEARTBEAT, version)
        fields: dict[str, Any] = {
            "group_id": self.group_id,
            "generation_id": self.generation_id,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
        }
        fields.update(overrides)
        resp: HeartbeatResponse = await self.probe.within(
            self._send(HeartbeatRequest(**fields), v), self.probe.target.reply_s, "Heartbeat"
        )
        return resp.error_code

    async def leave(self, version: int | None = None) -> LeaveGroupResponse:
        v = self.probe.version(ApiKey.LEAVE_GROUP, version)
        if v >= 3:
            req = LeaveGroupRequest(
                group_id=self.group_id,
                members=[
                    LeaveGroupRequestMemberIdentity(
                        member_id=self.member_id, group_instance_id=self.instance_id
                    )
                ],
            )
        else:
            req = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
        resp: LeaveGroupResponse = await self.probe.within(
            self._send(req, v), self.probe.target.reply_s, "LeaveGroup"
        )
        return resp

    async def commit(
        self,
        offset: int = 42,
        version: int | None = None,
        partitions: list[int] | None = None,
        **overrides: Any,
    ) -> list[int]:
        """OffsetCommit of ``offset`` for the topic; the per-partition error codes."""
        v = self.probe.version(ApiKey.OFFSET_COMMIT, version, at_least=2)
        fields: dict[str, Any] = {
            "group_id": self.group_id,
            "generation_id_or_member_epoch": self.generation_id,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id if v >= 7 else None,
            "topics": [
                OffsetCommitRequestTopic(
                    name=self.probe.target.topic,
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=offset, committed_metadata=""
                        )
                        for p in (partitions or [0])
                    ],
                )
            ],
        }
        fields.update(overrides)
        resp: OffsetCommitResponse = await self.probe.within(
            self._send(OffsetCommitRequest(**fields), v), self.probe.target.reply_s, "OffsetCommit"
        )
        return [p.error_code for t in resp.topics for p in t.partitions]

    def expect(self, what: str, expected: int, actual: int) -> None:
        """Check an error code against the request this member sent last."""
        body, version = self.last if self.last else (None, 0)
        self.probe.check_error(what, expected, actual, body, version)


def errors(codes: list[int]) -> str:
    return ", ".join(error_name(c) for c in codes)
