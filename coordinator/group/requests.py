"""Inputs to the state machine: the wire requests with version quirks already resolved."""

from __future__ import annotations

from .frozen import frozen


@frozen
class LeavingMember:
    member_id: str  # "" with an instance id: an admin removing a static member (KIP-345)
    group_instance_id: str | None = None
    reason: str | None = None


@frozen
class PartitionCommit:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None


@frozen
class TopicCommit:
    topic: str
    partitions: list[PartitionCommit]


@frozen
class JoinGroupInput:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v0: already set to the session timeout by the caller
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    api_version: int
    reason: str | None = None


@frozen
class SyncGroupInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[tuple[str, bytes]]
    api_version: int


@frozen
class HeartbeatInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@frozen
class LeaveGroupInput:
    group_id: str
    members: list[LeavingMember]


@frozen
class OffsetCommitInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: list[TopicCommit]
    api_version: int
