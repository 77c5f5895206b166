"""The Overview for a viewer who may not see every group: its figures from their groups
only. ListGroups lists every group only to a principal with DESCRIBE on the cluster; the
node-wide counts (connections, groups per node, rebalances and commits of all groups)
would tell anyone else how busy the other groups are."""

from __future__ import annotations

from typing import Any

from .activity import MINUTE_MS
from .views import ConsoleState, Viewer


def overview_for(state: ConsoleState, viewer: Viewer, data: dict[str, Any]) -> dict[str, Any]:
    node = state.node
    if viewer.sees_all_groups(node):
        return data
    now = state.now_ms()
    minute = now // MINUTE_MS
    per_minute = dict.fromkeys(range(minute - 59, minute + 1), 0)
    for g in state.visible_groups(viewer):
        activity = state.activity.group(g.group_id)
        for started in activity.starts if activity is not None else ():
            if started // MINUTE_MS in per_minute:
                per_minute[started // MINUTE_MS] += 1
    return {
        **data,
        "connections": None,  # not theirs to know
        "commits_per_second": None,
        "commits_total": None,
        "nodes": [{**n, "groups": None} for n in data["nodes"]],
        "rebalances_per_minute": [
            {"minute_ms": m * MINUTE_MS, "count": c} for m, c in per_minute.items()
        ],
        "rebalances_last_hour": sum(per_minute.values()),
    }
