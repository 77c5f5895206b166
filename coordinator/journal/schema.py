"""Group events as journal entries (the format is documented in docs/journal.md).

Runs on the journal's writer thread, not the event loop: member assignments are decoded
here, so a large group's SyncGroup costs the loop nothing extra.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, assert_never, get_args

from protocol.consumer import CONSUMER_PROTOCOL_TYPE, decode_assignment
from protocol.errors import DecodeError

from ..cluster import events as cluster
from ..group import events
from ..shared.events import NodeEvent

#: Bumped when a field changes meaning or is removed; new fields do not bump it.
SCHEMA_VERSION = 1

#: Events that are a log line and a metric, not a journal entry (``_body`` returns None).
NOT_JOURNALED: frozenset[type] = frozenset(
    {events.LimitReached, events.GroupConfigCapped, cluster.LeaseRenewed}
)
#: Events that make journal lines: every other event the node reports. Derived, so a new
#: event is journaled once ``_body`` knows it (a hand-kept list once left KIP-848's out).
JOURNALED: frozenset[type] = (
    frozenset(set(get_args(events.GroupEvent)) | set(get_args(cluster.ClusterEvent)))
    - NOT_JOURNALED
)


def to_entry(
    event: NodeEvent, created_s: float, node_id: int, seq: int | None = None
) -> dict[str, Any] | None:
    """The journal line for ``event`` (None: not journaled), stamped ``created_s`` and, when
    given, the node's sequence number ``seq`` (orders entries that share a millisecond)."""
    body = _body(event)
    if body is None:
        return None
    ts_ms = int(created_s * 1000)
    stamp = datetime.fromtimestamp(ts_ms / 1000, UTC).isoformat(timespec="milliseconds")
    entry: dict[str, Any] = {
        "v": SCHEMA_VERSION,
        "ts": stamp.replace("+00:00", "Z"),
        "ts_ms": ts_ms,
        "node": node_id,
    }
    if seq is not None:
        entry["seq"] = seq
    entry.update(body)
    return entry


def _body(e: NodeEvent) -> dict[str, Any] | None:
    match e:
        case events.MemberJoined():
            return {
                "type": "member_joined",
                "group": e.group_id,
                "member": e.member_id,
                "instance": e.group_instance_id,
                "client_id": e.client_id,
                "client_host": e.client_host,
                "protocols": e.protocols,
            }
        case events.MemberRemoved():
            return _removal(e)
        case events.StaticMemberReplaced():
            return {
                "type": "static_member_replaced",
                "group": e.group_id,
                "instance": e.group_instance_id,
                "old_member": e.old_member_id,
                "member": e.new_member_id,
            }
        case events.RebalanceStarted():
            return {
                "type": "rebalance_started",
                "group": e.group_id,
                "generation": e.generation_id,
                "trigger": e.trigger.value,
                "reason": e.reason,
            }
        case events.JoinCompleted():
            return {
                "type": "join_completed",
                "group": e.group_id,
                "generation": e.generation_id,
                "members": e.members,
                "leader": e.leader,
                "protocol": e.protocol_name,
                "duration_ms": e.duration_ms,
            }
        case events.SyncCompleted():
            return {
                "type": "sync_completed",
                "group": e.group_id,
                "generation": e.generation_id,
                "duration_ms": e.duration_ms,
                "rebalance_duration_ms": e.rebalance_duration_ms,
                "assignment": {
                    member: _assignment_size(e.protocol_type, data)
                    for member, data in e.assignments
                },
            }
        case events.StateChanged():
            return {
                "type": "state_changed",
                "group": e.group_id,
                "from": e.old_state,
                "to": e.new_state,
            }
        case events.GroupDeleted():
            return {"type": "group_deleted", "group": e.group_id, "reason": e.reason}
        case events.OffsetsCommitted():
            return {"type": "offsets_committed", "group": e.group_id, "count": e.count}
        case events.OffsetsExpired():
            return {"type": "offsets_expired", "group": e.group_id, "count": e.count}
        case events.GroupLoaded():
            return {
                "type": "group_loaded",
                "group": e.group_id,
                "state": e.state,
                "members": e.members,
                "offsets": e.offsets,
            }
        case events.GroupReverted():
            return {
                "type": "group_reverted",
                "group": e.group_id,
                "generation": e.generation_id,
                "state": e.state,
                "members": e.members,
            }
        case events.GroupConverted():
            return {
                "type": "group_converted",
                "group": e.group_id,
                "from": e.from_type,
                "to": e.to_type,
                "epoch": e.epoch,
                "members": e.members,
                "reason": e.reason,
            }
        case events.GroupUnloaded():
            return {
                "type": "group_unloaded",
                "group": e.group_id,
                "generation": e.generation_id,
                "members": e.members,
            }
        case cluster.PartitionsAcquired():
            return {
                "type": "partitions_acquired",
                "partitions": e.partitions,
                "epochs": e.epochs,
                "groups": e.groups,
                "load_ms": e.load_ms,
                "owned": e.owned,
                "handed_over": e.handed_over,
            }
        case cluster.PartitionsReleased():
            return {
                "type": "partitions_released",
                "partitions": e.partitions,
                "reason": e.reason,
                "owned": e.owned,
                "handed_over": e.handed_over,
            }
        case cluster.PartitionsFenced():
            return {"type": "partitions_fenced", "partitions": e.partitions, "owned": e.owned}
        case events.TargetAssignmentComputed():
            return {
                "type": "target_assignment_computed",
                "group": e.group_id,
                "generation": e.group_epoch,
                "protocol": e.assignor,
                "members": e.members,
                "count": e.members_changed,
            }
        case events.MemberReconciled():
            return {
                "type": "member_reconciled",
                "group": e.group_id,
                "member": e.member_id,
                "generation": e.member_epoch,
                "duration_ms": e.duration_ms,
            }
        case events.LimitReached() | events.GroupConfigCapped() | cluster.LeaseRenewed():
            return None  # a log line and a metric, not a journal entry
        case _:
            assert_never(e)


def _removal(e: events.MemberRemoved) -> dict[str, Any]:
    if e.cause is events.RemovalCause.LEFT:
        kind, why = "member_left", {"reason": e.client_reason}
    elif e.cause.expired:
        kind, why = "member_expired", {"timer": e.cause.value}
    else:
        kind, why = "member_evicted", {"reason": e.cause.value}
    return {
        "type": kind,
        "group": e.group_id,
        "member": e.member_id,
        "instance": e.group_instance_id,
        **why,
        "detail": e.reason,
    }


def _assignment_size(protocol_type: str | None, data: bytes) -> dict[str, int | None]:
    """Bytes, and partitions when the group speaks the consumer protocol."""
    partitions: int | None = None
    if protocol_type == CONSUMER_PROTOCOL_TYPE and data:
        try:
            _version, assignment = decode_assignment(data)
        except DecodeError:
            pass  # not what it claims to be: only the size is known
        else:
            partitions = sum(len(tp.partitions) for tp in assignment.assigned_partitions)
    elif protocol_type == CONSUMER_PROTOCOL_TYPE:
        partitions = 0
    return {"bytes": len(data), "partitions": partitions}
