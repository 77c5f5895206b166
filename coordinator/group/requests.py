"""Inputs to the state machine: the wire requests with version quirks already resolved."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class SyncGroupInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[tuple[str, bytes]]
    api_version: int


@dataclass(frozen=True, slots=True)
class HeartbeatInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, slots=True)
class LeaveGroupInput:
    group_id: str
    members: list[tuple[str, str | None, str | None]]  # (member id, instance id, reason)


@dataclass(frozen=True, slots=True)
class OffsetCommitInput:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    # (topic, [(partition, offset, leader epoch, metadata)])
    topics: list[tuple[str, list[tuple[int, int, int, str | None]]]]
    api_version: int
