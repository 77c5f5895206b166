"""Records of every type, in the order a state machine could have written them, and what a
coordinator that loaded them holds (``shard_view``): what the replay tests compare.

``data/store-main-0f96646.*`` were written from ``RECORDS`` by main 0f96646's stores (the
SQLite file, and a ``pg_dump`` of the PostgreSQL database): keep ``RECORDS`` as it is.
"""

from __future__ import annotations

from typing import Any

from coordinator.group import GroupConfig, GroupCoordinator
from coordinator.group.deadlines import consumer_session_key, heartbeat_key
from coordinator.group.records import (
    ConsumerGroupDeletedRecord,
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberRemovedRecord,
    GroupConfigRecord,
    GroupDeletedRecord,
    GroupMetadataRecord,
    HeartbeatRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetDeleteRecord,
    Record,
)

#: When the coordinator loads them (every timestamp below is earlier).
NOW_MS = 1_000_000
TOPICS = {"orders": 6, "audit": 2, "events-a": 3, "events-b": 1}


def _member(member_id: str, last_heartbeat_ms: int, instance: str | None = None) -> MemberRecord:
    return MemberRecord(
        member_id,
        instance,
        f"client-{member_id}",
        "/127.0.0.1",
        300_000,
        45_000,
        "consumer",
        [("range", b"\x00\x01meta"), ("roundrobin", b"")],
        b"\x00assigned-" + member_id.encode(),
        last_heartbeat_ms,
    )


def _snapshot(
    group_id: str, state: str, generation: int, *members: MemberRecord
) -> GroupMetadataRecord:
    return GroupMetadataRecord(
        group_id,
        state,
        900_000,
        "consumer" if members or state != "Empty" else None,
        "range" if members else None,
        generation,
        members[0].member_id if members else None,
        list(members),
    )


def _offset(
    group_id: str, topic: str, partition: int, offset: int, **kw: Any
) -> OffsetCommitRecord:
    fields: dict[str, Any] = {
        "leader_epoch": -1,
        "metadata": f"m{offset}",
        "commit_timestamp_ms": 950_000,
        "expire_timestamp_ms": None,
    }
    fields.update(kw)
    return OffsetCommitRecord(group_id, topic, partition, offset, **fields)


def _consumer_member(group_id: str, member_id: str, **kw: Any) -> ConsumerMemberRecord:
    fields: dict[str, Any] = {
        "instance_id": None,
        "rack_id": None,
        "client_id": f"client-{member_id}",
        "client_host": "/127.0.0.1",
        "rebalance_timeout_ms": 60_000,
        "subscribed_topic_names": ["orders"],
        "server_assignor": "uniform",
        "state": "stable",
        "member_epoch": 3,
        "previous_member_epoch": 2,
        "assigned": {"orders": [0, 1, 2]},
        "pending_revocation": {},
        "target": {"orders": [0, 1, 2]},
    }
    fields.update(kw)
    return ConsumerMemberRecord(group_id, member_id, **fields)


RECORDS: list[Record] = [
    # Group configs: one kept, one set and deleted.
    GroupConfigRecord("kip848", {"consumer.session.timeout.ms": 50_000}),
    GroupConfigRecord("configured", {"consumer.heartbeat.interval.ms": 4_000}),
    GroupConfigRecord("configured", {}),
    # A classic group: snapshot, a newer snapshot, heartbeats checkpointed since, offsets
    # (one deleted, one with a NUL and non-ASCII metadata, one with an expiry).
    _snapshot("classic", "Stable", 3, _member("a", 800_000), _member("b", 800_000)),
    HeartbeatRecord("classic", "a", 850_000),
    _snapshot("classic", "Stable", 4, _member("a", 900_000, "static-a"), _member("b", 900_000)),
    HeartbeatRecord("classic", "b", 990_000),
    _offset("classic", "orders", 0, 10, leader_epoch=5, metadata="with\x00nul and é"),
    _offset("classic", "orders", 1, 11, expire_timestamp_ms=5_000_000),
    _offset("classic", "orders", 2, 12),
    OffsetDeleteRecord("classic", "orders", 2),
    _offset("classic", "orders", 0, 20, leader_epoch=6, metadata=""),
    # Saved mid-rebalance: comes back rebalancing.
    _snapshot("rebalancing", "PreparingRebalance", 7, _member("r", 990_000)),
    # An empty classic group, and a simple group (offsets only).
    _snapshot("empty", "Empty", 2),
    _offset("simple", "audit", 0, 7),
    _offset("simple", "audit", 1, 8, commit_timestamp_ms=999_000),
    # A deleted classic group with its offsets.
    _snapshot("deleted", "Stable", 1, _member("d", 990_000)),
    _offset("deleted", "orders", 0, 1),
    GroupDeletedRecord("deleted"),
    # A consumer group: members (one speaking the classic protocol, one subscribing by
    # regex, one revoking), one removed, its offsets.
    ConsumerGroupRecord("kip848", 3, 3, {"orders": 6}),
    _consumer_member("kip848", "c1"),
    _consumer_member(
        "kip848",
        "c2",
        instance_id="static-2",
        rack_id="rack-1",
        assigned={"orders": [3, 4]},
        pending_revocation={"orders": [5]},
        target={"orders": [3, 4]},
        state="unrevoked_partitions",
        classic_session_timeout_ms=30_000,
        classic_protocols=[["range", "AAE="]],
    ),
    _consumer_member(
        "kip848",
        "c3",
        subscribed_topic_names=[],
        subscribed_topic_regex="events-.*",
        assigned={},
        target={"events-a": [0, 1, 2], "events-b": [0]},
        state="unreleased_partitions",
    ),
    _consumer_member("kip848", "c4"),
    ConsumerMemberRemovedRecord("kip848", "c4"),
    ConsumerGroupRecord("kip848", 4, 4, {"orders": 6, "events-a": 3, "events-b": 1}),
    _offset("kip848", "orders", 3, 33),
    # A consumer group deleted (its offsets stay), another deleted with its offsets.
    ConsumerGroupRecord("kip-gone", 2, 2, {"orders": 6}),
    _consumer_member("kip-gone", "g1"),
    _offset("kip-gone", "orders", 4, 44),
    ConsumerGroupDeletedRecord("kip-gone"),
    ConsumerGroupRecord("kip-deleted", 1, 1, {}),
    _consumer_member("kip-deleted", "x1", assigned={}, target={}),
    GroupDeletedRecord("kip-deleted"),
    # A classic group that became a consumer group once empty (its offsets are shared).
    _snapshot("converted", "Empty", 5),
    _offset("converted", "orders", 5, 55),
    ConsumerGroupRecord("converted", 1, 1, {"orders": 6}),
    _consumer_member("converted", "v1", assigned={"orders": [5]}, target={"orders": [5]}),
]

#: Every id the records name (a view reads what each of them holds, if anything).
GROUP_IDS = sorted({r.group_id for r in RECORDS})


def loaded(records: list[Record]) -> GroupCoordinator[object]:
    co: GroupCoordinator[object] = GroupCoordinator(
        GroupConfig(),
        topic_partitions=lambda t: TOPICS.get(t, 0),
        topic_names=lambda: list(TOPICS),
    )
    co.load(records, NOW_MS)
    return co


def shard_view(co: GroupCoordinator[object]) -> dict[str, Any]:
    """What a coordinator holds, as plain data: every group's kind, state, epochs, members
    with their timers, offsets and configs."""
    view: dict[str, Any] = {}
    for group_id in GROUP_IDS:
        g = co.groups.get(group_id)
        entry: dict[str, Any] = {"kind": None if g is None else type(g).__name__}
        classic = co.classic_group(group_id)
        consumer = co.consumer_group(group_id)
        if classic is not None:
            entry["group"] = (
                classic.state.value,
                classic.generation_id,
                classic.protocol_type,
                classic.protocol_name,
                classic.leader_id,
            )
            entry["members"] = {
                m.member_id: (
                    m.group_instance_id,
                    m.client_id,
                    m.session_timeout_ms,
                    m.rebalance_timeout_ms,
                    list(m.protocols),
                    m.assignment,
                    m.last_heartbeat_ms,
                    co.timer_deadline(heartbeat_key(group_id, m.member_id)),
                )
                for m in classic.members.values()
            }
        if consumer is not None:
            entry["group"] = (
                consumer.state.value,
                consumer.group_epoch,
                consumer.assignment_epoch,
                dict(consumer.subscription_metadata),
            )
            entry["members"] = {
                m.member_id: (
                    m.state.value,
                    m.member_epoch,
                    m.previous_member_epoch,
                    m.instance_id,
                    m.rack_id,
                    m.subscribed_topic_names,
                    m.subscribed_topic_regex,
                    {t: sorted(ps) for t, ps in m.assigned.items()},
                    {t: sorted(ps) for t, ps in m.pending_revocation.items()},
                    m.classic,
                    co.timer_deadline(consumer_session_key(group_id, m.member_id)),
                )
                for m in consumer.members.values()
            }
            entry["described"] = co.consumer_group_describe([group_id])
        fetched = co.fetch_offsets(group_id, None, NOW_MS)
        entry["offsets"] = sorted(
            (t.topic, p.partition, p.offset, p.leader_epoch, p.metadata)
            for t in fetched.topics
            for p in t.partitions
        )
        entry["configs"] = [
            (c.name, c.value, c.source) for c in co.describe_group_configs(group_id, None)
        ]
        view[group_id] = entry
    view["listed"] = sorted(
        (g.group_id, g.group_type, g.group_state) for g in co.list_groups([], [])
    )
    view["described"] = co.describe_groups(GROUP_IDS)
    return view
