"""A group snapshot (``GroupMetadataRecord``, or a KIP-848 ``ConsumerGroupRecord``) as the
JSON document the store keeps: bytes as base64, so the store needs no schema change when
the snapshot gains a field."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from ..group.handover import GroupHandover
from ..group.records import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    GroupMetadataRecord,
    MemberRecord,
)

SNAPSHOT_VERSION = 1


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def snapshot_to_json(r: GroupMetadataRecord) -> dict[str, Any]:
    return {
        "version": SNAPSHOT_VERSION,
        "state": r.state,
        "state_timestamp_ms": r.state_timestamp_ms,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol_name,
        "generation_id": r.generation_id,
        "leader_id": r.leader_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "session_timeout_ms": m.session_timeout_ms,
                "protocol_type": m.protocol_type,
                "protocols": [[name, _b64(meta)] for name, meta in m.protocols],
                "assignment": _b64(m.assignment),
                "last_heartbeat_ms": m.last_heartbeat_ms,
            }
            for m in r.members
        ],
    }


def snapshot_from_json(group_id: str, d: dict[str, Any]) -> GroupMetadataRecord:
    if d.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"group {group_id!r}: unknown snapshot version {d.get('version')!r}")
    return GroupMetadataRecord(
        group_id=group_id,
        state=d["state"],
        state_timestamp_ms=d["state_timestamp_ms"],
        protocol_type=d["protocol_type"],
        protocol_name=d["protocol_name"],
        generation_id=d["generation_id"],
        leader_id=d["leader_id"],
        members=[
            MemberRecord(
                member_id=m["member_id"],
                group_instance_id=m["group_instance_id"],
                client_id=m["client_id"],
                client_host=m["client_host"],
                rebalance_timeout_ms=m["rebalance_timeout_ms"],
                session_timeout_ms=m["session_timeout_ms"],
                protocol_type=m["protocol_type"],
                protocols=[(name, base64.b64decode(meta)) for name, meta in m["protocols"]],
                assignment=base64.b64decode(m["assignment"]),
                last_heartbeat_ms=m["last_heartbeat_ms"],
            )
            for m in d["members"]
        ],
    )


CONSUMER_SNAPSHOT_VERSION = 1


def consumer_group_to_json(r: ConsumerGroupRecord) -> dict[str, Any]:
    return {
        "version": CONSUMER_SNAPSHOT_VERSION,
        "group_epoch": r.group_epoch,
        "assignment_epoch": r.assignment_epoch,
        "subscription_metadata": r.subscription_metadata,
    }


def consumer_group_from_json(group_id: str, d: dict[str, Any]) -> ConsumerGroupRecord:
    _check_version(f"consumer group {group_id!r}", d)
    return ConsumerGroupRecord(
        group_id, d["group_epoch"], d["assignment_epoch"], d["subscription_metadata"]
    )


def consumer_member_to_json(r: ConsumerMemberRecord) -> dict[str, Any]:
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name not in _KEYS}
    return {"version": CONSUMER_SNAPSHOT_VERSION, **fields}


def consumer_member_from_json(
    group_id: str, member_id: str, d: dict[str, Any]
) -> ConsumerMemberRecord:
    _check_version(f"consumer group {group_id!r}", d)
    fields = {k: v for k, v in d.items() if k != "version"}
    return ConsumerMemberRecord(group_id=group_id, member_id=member_id, **fields)


_KEYS = ("group_id", "member_id")


def _check_version(what: str, d: dict[str, Any], version: int = CONSUMER_SNAPSHOT_VERSION) -> None:
    if d.get("version") != version:
        raise ValueError(f"{what}: unknown record version {d.get('version')!r}")


HANDOVER_VERSION = 1


def handover_to_json(h: GroupHandover) -> dict[str, Any]:
    return {
        "version": HANDOVER_VERSION,
        "generation_id": h.generation_id,
        "sessions": h.sessions,
        "pending": h.pending,
    }


def handover_from_json(group_id: str, d: dict[str, Any], age_ms: int) -> GroupHandover:
    _check_version(f"hand-over of group {group_id!r}", d, HANDOVER_VERSION)
    return GroupHandover(group_id, d["generation_id"], d["sessions"], d["pending"], age_ms)
