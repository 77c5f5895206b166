"""Every group of the cluster as the shared PostgreSQL store last wrote it: what any node's
console lists of the groups the other nodes coordinate.

The owner writes a group before it answers for a change (fenced writes), so the store is
at most one write behind what the owner holds in memory. A classic group's state,
protocol, generation and members come from its snapshot; a KIP-848 group's state is
worked out as its coordinator does (Empty, Assigning, Reconciling, Stable) from its epochs
and its members' rows; a group known only by its committed offsets is an Empty classic
group, as ListGroups shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

CLASSIC = "classic"
CONSUMER = "consumer"


@dataclass(frozen=True, slots=True)
class StoredGroup:
    group_id: str
    type: str  # classic or consumer (KIP-848)
    state: str
    protocol_type: str
    protocol: str
    members: int
    generation: int  # a classic group's generation, a consumer group's group epoch
    partition: int | None  # its coordinator partition


_CLASSIC = """
SELECT group_id, coordinator_partition,
       d->>'state' AS state, coalesce(d->>'protocol_type', '') AS protocol_type,
       coalesce(d->>'protocol_name', '') AS protocol,
       coalesce(jsonb_array_length(d->'members'), 0) AS members,
       coalesce((d->>'generation_id')::integer, 0) AS generation
FROM (SELECT group_id, coordinator_partition, data::jsonb AS d FROM groups) AS g
"""

_CONSUMER = """
SELECT g.group_id, g.coordinator_partition,
       (g.d->>'group_epoch')::bigint AS group_epoch,
       (g.d->>'assignment_epoch')::bigint AS assignment_epoch,
       count(m.member_id) AS members,
       count(m.member_id) FILTER (
           WHERE m.d->>'state' = 'stable'
             AND (m.d->>'member_epoch')::bigint = (g.d->>'assignment_epoch')::bigint
       ) AS reconciled,
       min(m.d->>'server_assignor') AS assignor
FROM (SELECT group_id, coordinator_partition, data::jsonb AS d FROM consumer_groups) AS g
LEFT JOIN (SELECT group_id, member_id, data::jsonb AS d FROM consumer_group_members) AS m
       ON m.group_id = g.group_id
GROUP BY g.group_id, g.coordinator_partition, g.d
"""

_OFFSETS_ONLY = """
SELECT DISTINCT group_id, coordinator_partition FROM offsets o
WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id)
  AND NOT EXISTS (SELECT 1 FROM consumer_groups c WHERE c.group_id = o.group_id)
"""


def consumer_state(members: int, group_epoch: int, assignment_epoch: int, reconciled: int) -> str:
    """As ``ConsumerGroup.state``: from the epochs and how many members reached the target."""
    if not members:
        return "Empty"
    if group_epoch > assignment_epoch:
        return "Assigning"
    return "Stable" if reconciled == members else "Reconciling"


async def read_groups(conn: asyncpg.Connection, default_assignor: str) -> list[StoredGroup]:
    """Every group in the store (a consumer group's offsets holder is not listed apart)."""
    out: dict[str, StoredGroup] = {}
    for r in await conn.fetch(_CLASSIC):
        if r["state"] == "Dead":
            continue
        out[r["group_id"]] = StoredGroup(
            r["group_id"],
            CLASSIC,
            r["state"] or "Empty",
            r["protocol_type"],
            r["protocol"],
            r["members"],
            r["generation"],
            r["coordinator_partition"],
        )
    for r in await conn.fetch(_CONSUMER):
        members = int(r["members"])
        out[r["group_id"]] = StoredGroup(
            r["group_id"],
            CONSUMER,
            consumer_state(members, r["group_epoch"], r["assignment_epoch"], r["reconciled"]),
            "consumer",
            (r["assignor"] or default_assignor) if members else "",
            members,
            int(r["group_epoch"]),
            r["coordinator_partition"],
        )
    for r in await conn.fetch(_OFFSETS_ONLY):
        out.setdefault(
            r["group_id"],
            StoredGroup(r["group_id"], CLASSIC, "Empty", "", "", 0, 0, r["coordinator_partition"]),
        )
    return sorted(out.values(), key=lambda g: g.group_id)
