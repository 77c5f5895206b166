"""Between the state machine's records and the store's rows.

``to_write`` turns the records of one ``Effects`` into one ``Write``; ``to_records`` turns
what a store loaded back into records for ``GroupCoordinator.load``. A group snapshot is
kept as a JSON document (bytes as base64), so the store needs no schema change when the
state machine's snapshot gains a field.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from .group.records import (
    GroupDeletedRecord,
    GroupMetadataRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
)
from .store import GroupRow, LoadedState, OffsetRow, Write

SNAPSHOT_VERSION = 1


def to_write(records: Iterable[object]) -> Write:
    batch = Write()
    for record in records:
        if isinstance(record, OffsetCommitRecord):
            batch.offsets.append(
                OffsetRow(
                    record.group_id,
                    record.topic,
                    record.partition,
                    record.offset,
                    record.leader_epoch,
                    record.metadata,
                    record.commit_timestamp_ms,
                    record.expire_timestamp_ms,
                )
            )
        elif isinstance(record, GroupMetadataRecord):
            batch.groups.append(GroupRow(record.group_id, snapshot_to_json(record)))
        elif isinstance(record, OffsetDeleteRecord):
            batch.deleted_offsets.append((record.group_id, record.topic, record.partition))
        elif isinstance(record, GroupDeletedRecord):
            batch.deleted_groups.append(record.group_id)
        else:
            raise TypeError(f"no row for record {record!r}")
    return batch


def to_records(state: LoadedState) -> list[object]:
    records: list[object] = []
    for row in state.groups:
        snapshot = snapshot_from_json(row.group_id, row.data)
        records.append(_with_checkpointed_heartbeats(snapshot, state.heartbeats))
    records.extend(
        OffsetCommitRecord(
            o.group_id,
            o.topic,
            o.partition,
            o.committed_offset,
            o.leader_epoch,
            o.metadata,
            o.commit_timestamp_ms,
            o.expire_timestamp_ms,
        )
        for o in state.offsets
    )
    return records


def _with_checkpointed_heartbeats(
    snapshot: GroupMetadataRecord, heartbeats: dict[tuple[str, str], int]
) -> GroupMetadataRecord:
    members = []
    changed = False
    for m in snapshot.members:
        last = heartbeats.get((snapshot.group_id, m.member_id), m.last_heartbeat_ms)
        if last > m.last_heartbeat_ms:
            changed = True
            m = MemberRecord(**{**_fields(m), "last_heartbeat_ms": last})
        members.append(m)
    if not changed:
        return snapshot
    return GroupMetadataRecord(**{**_fields(snapshot), "members": members})


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__}


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
