"""What the console shows, as plain data: the JSON API returns it, the templates render it.

Every function reads the node's state in memory, on the event loop, and returns at once:
nothing here awaits, writes or blocks. A ``Viewer`` filters what its principal may see with
the Kafka APIs' own ACL checks (DESCRIBE on a group or topic), so the console shows no more
than DescribeGroups, ListGroups, OffsetFetch and Metadata would.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster.directory import StoredGroup
from ..cluster.routing import ClusterRouting
from ..group.inspection import GroupView, MemberView
from ..group.model import CLASSIC, CONSUMER, Group
from ..handlers.node import Node
from ..journal.schema import to_entry
from ..shared.accounts import CLUSTER_NAME, Operation, ResourceType
from .activity import HOUR_MS, Activity, GroupActivity
from .cluster_view import ClusterGroups, coordinator, group_url
from .colours import MemberColours, identity
from .liveness import is_late, late_after_ms

#: The group types, as ListGroups names them (KIP-848 consumer groups: ``CONSUMER``).
TYPES = (CLASSIC, CONSUMER)
STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead")
#: A consumer group's states besides Stable and Empty (KIP-848).
CONSUMER_STATES = ("Assigning", "Reconciling")
#: The states the Overview counts for each type (Dead groups are gone).
STATES_SHOWN = {
    CLASSIC: ("Empty", "Stable", "PreparingRebalance", "CompletingRebalance"),
    CONSUMER: ("Empty", "Stable", *CONSUMER_STATES),
}
#: A group in this node's memory, or another node's as the shared store has it.
ListedGroup = Group | StoredGroup
SORT_KEYS = (
    "id",
    "type",
    "state",
    "protocol",
    "members",
    "generation",
    "last_rebalance",
    "rebalances_1h",
)
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: Journal events on the overview.
OVERVIEW_EVENTS = 30


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: a principal from an address ("/127.0.0.1", as Kafka writes it)."""

    principal: str
    host: str

    def may(self, node: Node, operation: Operation, kind: ResourceType, name: str) -> bool:
        return node.security.may(self.principal, self.host, operation, kind, name)

    def sees_group(self, node: Node, group_id: str) -> bool:
        return self.may(node, Operation.DESCRIBE, ResourceType.GROUP, group_id)

    def sees_topic(self, node: Node, topic: str) -> bool:
        return self.may(node, Operation.DESCRIBE, ResourceType.TOPIC, topic)

    def sees_all_groups(self, node: Node) -> bool:
        # ListGroups lists every group to a principal with DESCRIBE on the cluster.
        return not node.security.acls_enabled or self.may(
            node, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME
        )


@dataclass
class ConsoleState:
    node: Node
    activity: Activity
    connections: Callable[[], int]
    admin: bool = False
    #: The ``analyze --report`` directory (None: the Analysis page says how to get one).
    analytics: Path | None = None
    #: Each member's colour in the partition picture, kept across rebalances.
    colours: MemberColours = field(default_factory=MemberColours)
    #: In a cluster: every node's groups, from the shared store.
    cluster: ClusterGroups | None = None

    def now_ms(self) -> int:
        return self.node.now_ms()

    def visible_groups(self, viewer: Viewer) -> list[Group]:
        """Classic and consumer groups."""
        groups: list[Group] = list(self.node.groups.groups.values())
        if viewer.sees_all_groups(self.node):
            return groups
        return [g for g in groups if viewer.sees_group(self.node, g.group_id)]

    def other_nodes_groups(self, viewer: Viewer) -> list[StoredGroup]:
        """In a cluster, the groups this node does not hold, as the store last had them."""
        if self.cluster is None or not self.cluster.groups:
            return []
        held = self.node.groups
        everything = viewer.sees_all_groups(self.node)
        return [
            g
            for g in self.cluster.groups
            if g.group_id not in held.groups
            and (everything or viewer.sees_group(self.node, g.group_id))
        ]

    def listed_groups(self, viewer: Viewer) -> list[ListedGroup]:
        """Every group of the cluster this viewer may see (this node's, live, first)."""
        listed: list[ListedGroup] = list(self.visible_groups(viewer))
        listed.extend(self.other_nodes_groups(viewer))
        return listed


# What the tables show of either kind of group.


def type_of(g: ListedGroup) -> str:
    return g.type if isinstance(g, StoredGroup) else g.group_type


def state_of(g: ListedGroup) -> str:
    return g.state if isinstance(g, StoredGroup) else g.state_name


def members_of(g: ListedGroup) -> int:
    return g.members if isinstance(g, StoredGroup) else g.member_count


def protocol_of(g: ListedGroup) -> tuple[str, str]:
    """(protocol type, protocol): a consumer group's protocol is its server assignor."""
    if isinstance(g, StoredGroup):
        return g.protocol_type, g.protocol
    return g.described_protocol()


def generation_of(g: ListedGroup) -> int:
    """The generation of a classic group, the group epoch of a consumer group."""
    return g.generation


# -- overview ---------------------------------------------------------------------------------


def overview(state: ConsoleState, viewer: Viewer) -> dict[str, Any]:
    node, now = state.node, state.now_ms()
    groups = state.listed_groups(viewer)  # in a cluster, every node's
    by_type_state: Counter[tuple[str, str]] = Counter()
    members = 0
    for g in groups:  # one pass: a consumer group's state looks at each of its members
        by_type_state[(type_of(g), state_of(g))] += 1
        members += members_of(g)
    by_state: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    for (kind, group_state), n in by_type_state.items():
        by_state[group_state] += n
        by_type[kind] += n
    shown_states = [*STATES_SHOWN[CLASSIC], *CONSUMER_STATES]
    per_minute = state.activity.rebalances_per_minute(now)
    return {
        "now_ms": now,
        "cluster_id": node.settings.cluster_id,
        "node_id": node.settings.node_id,
        "nodes": _nodes(node, groups),
        "connections": state.connections(),
        "groups": len(groups),
        "groups_by_state": {s: by_state.get(s, 0) for s in shown_states},
        "groups_by_type": {CLASSIC: by_type[CLASSIC], CONSUMER: by_type[CONSUMER]},
        # Each type's own states only: a classic group is never Reconciling, a consumer
        # group never CompletingRebalance (the page shows those cells as not applying).
        "groups_by_type_and_state": {
            t: {s: by_type_state[(t, s)] for s in STATES_SHOWN[t]} for t in (CLASSIC, CONSUMER)
        },
        "members": members,
        "topics": sum(1 for t in node.catalog.all() if viewer.sees_topic(node, t.name)),
        "rebalances_last_hour": sum(c for _, c in per_minute),
        "rebalances_per_minute": [{"minute_ms": m, "count": c} for m, c in per_minute],
        "commits_per_second": state.activity.commits_per_second(now),
        "commits_total": state.activity.commits_total,
        "recent_events": recent_events(state, viewer, OVERVIEW_EVENTS),
        "upstream": _upstream(node),
        "admin": state.admin,
    }


def _upstream(node: Node) -> dict[str, Any] | None:
    """serve --upstream: whether the upstream broker answers (None: no upstream)."""
    shown = node.log_ends.upstream
    if shown is None:
        return None
    return {"reachable": shown.reachable, "error": shown.error}


def _nodes(node: Node, groups: list[ListedGroup]) -> list[dict[str, Any]]:
    me = node.settings.node_id
    routing = node.routing
    if not isinstance(routing, ClusterRouting):
        host, port = node.settings.advertised
        return [
            {
                "node_id": me,
                "this": True,
                "address": f"{host}:{port}",
                "console_url": None,
                "partitions": None,  # one node coordinates every group
                "groups": _group_count(node),
            }
        ]
    now = node.now_ms()
    owned = Counter(routing.owners.values())
    per_node = Counter(
        # A stored group carries its partition: no hashing its id again.
        routing.owner_of(g.partition, now)
        if isinstance(g, StoredGroup) and g.partition is not None
        else routing.coordinator(g.group_id, now)
        for g in groups
    )
    out: list[dict[str, Any]] = []
    for address in routing.nodes(now):
        listeners = address.listeners
        first = next(iter(listeners.values()), None)
        out.append(
            {
                "node_id": address.node_id,
                "this": address.node_id == me,
                "address": None if first is None else f"{first[0]}:{first[1]}",
                "console_url": address.console_url,
                "partitions": owned.get(address.node_id, 0),
                "groups": per_node.get(address.node_id, 0),
            }
        )
    return out


def _group_count(node: Node) -> int:
    return len(node.groups.groups)


def recent_events(state: ConsoleState, viewer: Viewer, limit: int) -> list[dict[str, Any]]:
    """The last journal entries (as docs/journal.md writes them) this viewer may see."""
    node = state.node
    out: list[dict[str, Any]] = []
    for ts_ms, event in reversed(state.activity.recent):
        group_id = getattr(event, "group_id", None)
        if group_id is not None and not viewer.sees_group(node, group_id):
            continue
        if group_id is None and not viewer.sees_all_groups(node):
            continue  # cluster events: for who may describe the cluster
        entry = to_entry(event, ts_ms / 1000, node.settings.node_id)
        if entry is not None:
            out.append(entry)
        if len(out) >= limit:
            break
    return out


# -- groups -----------------------------------------------------------------------------------


def _group_row(state: ConsoleState, g: ListedGroup, hour_ago: int) -> dict[str, Any]:
    owner = coordinator(state.node, g.group_id)
    link = None if owner is None or owner["this"] else group_url(owner["console_url"], g.group_id)
    if isinstance(g, StoredGroup):  # another node's: as the store has it
        return {
            "id": g.group_id,
            "type": g.type,
            "state": g.state,
            "protocol_type": g.protocol_type,
            "protocol": g.protocol,
            "members": g.members,
            "generation": g.generation,
            "last_rebalance": None,  # its coordinator's console has the timeline
            "rebalances_1h": None,
            "coordinator": owner,
            "url": link,
        }
    activity = state.activity.group(g.group_id)
    last = activity.last if activity is not None else None
    protocol_type, protocol = protocol_of(g)
    return {
        "id": g.group_id,
        "type": type_of(g),
        "state": state_of(g),
        "protocol_type": protocol_type,
        "protocol": protocol,
        "members": members_of(g),
        "generation": generation_of(g),
        "last_rebalance": None if last is None else last.as_dict(),
        "rebalances_1h": 0 if activity is None else activity.starts_since(hour_ago),
        "coordinator": owner,
        "url": link,
    }


def _sort_key(state: ConsoleState, key: str, hour_ago: int) -> Callable[[ListedGroup], Any]:
    """Each column's value, read from the group itself: sorting builds no rows."""
    activity = state.activity.groups
    if key == "last_rebalance":

        def last_started(g: ListedGroup) -> int:
            found = activity.get(g.group_id)
            last = found.last if found is not None else None
            return last.started_ms if last is not None else 0

        return last_started
    if key == "rebalances_1h":

        def recent(g: ListedGroup) -> int:
            found = activity.get(g.group_id)
            return found.starts_since(hour_ago) if found is not None else 0

        return recent
    by_column: dict[str, Callable[[ListedGroup], Any]] = {
        "type": type_of,
        "state": state_of,
        "protocol": protocol_of,
        "members": members_of,
        "generation": generation_of,
    }
    return by_column[key]


def groups_page(
    state: ConsoleState,
    viewer: Viewer,
    *,
    q: str = "",
    group_state: str = "",
    group_type: str = "",
    sort: str = "id",
    order: str = "asc",
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> dict[str, Any]:
    """One page of the groups this viewer may see, searched (a substring of the id,
    case-insensitive), filtered by state and type, sorted and paginated on the server."""
    sort = sort if sort in SORT_KEYS else "id"
    order = "desc" if order == "desc" else "asc"
    page_size = min(max(page_size, 1), MAX_PAGE_SIZE)
    needle = q.strip().lower()
    wanted_state = group_state.strip().lower()
    wanted_type = group_type.strip().lower()
    groups = [
        g
        for g in state.listed_groups(viewer)
        if (not needle or needle in g.group_id.lower())
        and (not wanted_state or state_of(g).lower() == wanted_state)
        and (not wanted_type or type_of(g) == wanted_type)
    ]
    total = len(groups)
    pages = max((total + page_size - 1) // page_size, 1)
    page = min(max(page, 1), pages)
    hour_ago = state.now_ms() - HOUR_MS
    reverse = order == "desc"
    groups.sort(key=lambda g: g.group_id, reverse=reverse and sort == "id")
    if sort != "id":
        groups.sort(key=_sort_key(state, sort, hour_ago), reverse=reverse)  # ties by id
    chosen = groups[(page - 1) * page_size : page * page_size]
    rows = [_group_row(state, g, hour_ago) for g in chosen]
    lags = _lag_by_group(state.node)
    for row in rows:
        row["lag"] = lags.get(row["id"])
    return {
        "upstream": state.node.log_ends.upstream is not None,
        "clustered": state.cluster is not None,
        "cluster_problem": None if state.cluster is None else state.cluster.problem,
        "total": total,
        "page": page,
        "pages": pages,
        "page_size": page_size,
        "q": q,
        "state": group_state,
        "type": group_type,
        "sort": sort,
        "order": order,
        "groups": rows,
    }


def _lag_by_group(node: Node) -> dict[str, int]:
    """serve --upstream: each group's lag, over the topics it committed on."""
    out: dict[str, int] = {}
    for (group, _topic), lag in node.log_ends.totals.items():
        out[group] = out.get(group, 0) + lag
    return out


# -- one group --------------------------------------------------------------------------------


def _time_in_states(
    activity: GroupActivity | None, current: str, since_ms: int | None, now: int
) -> dict[str, int]:
    """Time in each state since this node loaded the group; the current state's at least
    as long as the page says it has been in it (the group's own timestamp may be older
    than the load, as after a restart)."""
    if activity is None:
        return {}
    spent = activity.time_in_states(now)
    if since_ms:
        spent[current] = max(spent.get(current, 0), now - since_ms)
    return spent


def group_detail(state: ConsoleState, viewer: Viewer, group_id: str) -> dict[str, Any] | None:
    """Everything about one group of any kind (its view from the group core), or None when
    it does not exist or may not be seen: members (a consumer group's with their epochs and
    reconciliation state, what each still has to revoke and its target), the partition
    picture, the offsets and the rebalance timeline."""
    node = state.node
    if not viewer.sees_group(node, group_id):
        return None
    view = node.groups.group_view(group_id)
    if view is None:
        return None
    now = state.now_ms()
    colours = state.colours.of(
        view.group_id, (identity(m.member_id, m.instance_id) for m in view.members)
    )
    owners: dict[str, dict[int, str]] = {}
    members = []
    for m in view.members:
        for topic, ps in (m.assignment or {}).items():
            for p in ps:
                owners.setdefault(topic, {})[p] = m.member_id
        members.append(_member_row(view, m, colours[identity(m.member_id, m.instance_id)], now))
    activity = state.activity.group(group_id)
    out: dict[str, Any] = {
        "now_ms": now,
        "id": view.group_id,
        "type": view.group_type,
        "state": view.state,
        "state_since_ms": _state_since(view, activity),
        "protocol_type": view.protocol_type,
        "protocol": view.protocol,
        "generation": view.generation,
    }
    if view.assignment_epoch is not None:
        out["assignment_epoch"] = view.assignment_epoch
    out.update(
        leader=view.leader,
        members=members,
        assignment=_assignment_map(node, owners),
        offsets=_offsets(node, viewer, view.group_id),
        upstream=node.log_ends.upstream is not None,
        rebalances=[] if activity is None else [r.as_dict() for r in reversed(activity.rebalances)],
        rebalances_1h=0 if activity is None else activity.starts_since(now - HOUR_MS),
        time_in_states_ms=_time_in_states(activity, view.state, view.state_since_ms, now),
        last_commit_ms=None if activity is None else activity.last_commit_ms,
        commits=0 if activity is None else activity.commits,
        admin=state.admin,
    )
    return out


def _state_since(view: GroupView, activity: GroupActivity | None) -> int | None:
    """When the group entered its state: as it keeps it, else (a consumer group keeps no
    timestamp) when the events said it changed, if seen."""
    if view.state_since_ms is not None:
        return view.state_since_ms
    if activity is not None and activity.state == view.state:
        return activity.state_since_ms
    return None


def _member_row(view: GroupView, m: MemberView, colour: int, now: int) -> dict[str, Any]:
    """One member's row; the fields of its kind only (a classic member's assignment size, a
    consumer group member's epoch, reconciliation, revocations and target)."""
    last = m.last_heartbeat_ms
    since = None if last is None else max(now - last, 0)
    late_after = late_after_ms(view.heartbeat_interval_ms, m.session_timeout_ms, view.state)
    row: dict[str, Any] = {
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "client_id": m.client_id,
        "host": m.host,
        "session_timeout_ms": m.session_timeout_ms,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "last_heartbeat_ms": last,
        "since_heartbeat_ms": since,
        "heartbeat_late_after_ms": late_after,
        "heartbeat_late": is_late(since, late_after),
        "colour": colour,
        "leader": m.leader,
    }
    if m.assignment_bytes is not None:
        row["assignment_bytes"] = m.assignment_bytes
    if m.epoch is not None:
        row.update(epoch=m.epoch, reconciliation=m.reconciliation, protocol=m.protocol)
    row["assignment"] = m.assignment
    if m.pending_revocation is not None:
        row.update(pending_revocation=m.pending_revocation, target=m.target)
    return row


def group_elsewhere(state: ConsoleState, viewer: Viewer, group_id: str) -> dict[str, Any] | None:
    """A group this node does not hold, in a cluster: which node coordinates it and its
    console's page for it, and what the store has of it (None: no cluster, or not visible)."""
    node = state.node
    if state.cluster is None or not viewer.sees_group(node, group_id):
        return None
    owner = coordinator(node, group_id)
    stored = state.cluster.by_id().get(group_id)
    return {
        "id": group_id,
        "exists": stored is not None,
        "coordinator": owner,
        "url": None if owner is None else group_url(owner["console_url"], group_id),
        "stored": None if stored is None else dataclasses.asdict(stored),
    }


def _assignment_map(node: Node, owners: dict[str, dict[int, str]]) -> list[dict[str, Any]]:
    """Per assigned topic, each partition's owner (None: nobody), for the picture."""
    out = []
    for topic in sorted(owners):
        known = node.catalog.get(topic)
        count = max(known.partitions if known else 0, max(owners[topic]) + 1)
        out.append(
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "owner": owners[topic].get(p)} for p in range(count)
                ],
            }
        )
    return out


def _offsets(node: Node, viewer: Viewer, group_id: str) -> list[dict[str, Any]]:
    """Committed offsets, stored ones (as OffsetFetch), with those still being written."""
    out = []
    committed = node.groups.offsets.of(group_id)
    pending = node.groups.offsets.pending_of(group_id)
    for topic in sorted(committed):
        if not viewer.sees_topic(node, topic):
            continue
        for partition in sorted(committed[topic]):
            r = committed[topic][partition]
            out.append(
                {
                    # serve --upstream: the partition's log end and lag (None: unknown).
                    "log_end": node.log_ends.ends.get((topic, partition)),
                    "lag": node.log_ends.lag(topic, partition, r.offset),
                    "topic": topic,
                    "partition": partition,
                    "offset": r.offset,
                    "leader_epoch": r.leader_epoch,
                    "metadata": r.metadata,
                    "commit_ms": r.commit_timestamp_ms,
                    "expire_ms": r.expire_timestamp_ms,
                    "pending": (topic, partition) in pending,
                }
            )
    return out


# -- topics -----------------------------------------------------------------------------------


def topics(state: ConsoleState, viewer: Viewer) -> dict[str, Any]:
    """The virtual topics, each with the groups subscribed to it and those with offsets."""
    node = state.node
    subscribed: dict[str, list[str]] = {}
    committed: dict[str, list[str]] = {}
    for g in state.visible_groups(viewer):
        for topic in g.subscribed_topic_names():
            subscribed.setdefault(topic, []).append(g.group_id)
        for topic in node.groups.offsets.of(g.group_id):
            committed.setdefault(topic, []).append(g.group_id)
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": t.partitions,
                "topic_id": str(t.topic_id),
                "subscribed_groups": sorted(subscribed.get(t.name, [])),
                "committed_groups": sorted(committed.get(t.name, [])),
            }
            for t in node.catalog.all()
            if viewer.sees_topic(node, t.name)
        ]
    }


# -- analysis ---------------------------------------------------------------------------------

#: What ``analyze`` writes beside report.html (coordinator/analytics/command.py).
SUMMARY_FILE = "summary.json"


def analytics(state: ConsoleState, viewer: Viewer) -> dict[str, Any]:
    """The last ``analyze`` run's summary (its top groups and storms, as its tables have
    them), limited to the groups this viewer may see; read from disk when asked."""
    node = state.node
    out: dict[str, Any] = {"configured": state.analytics is not None, "found": False}
    if state.analytics is None:
        return out
    path = state.analytics / SUMMARY_FILE
    out["path"] = str(path)
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        out["problem"] = f"{type(exc).__name__}: {exc}"
        return out
    seen = [g for g in summary.get("top_groups", []) if viewer.sees_group(node, g.get("group", ""))]
    storms = [s for s in summary.get("storms", []) if viewer.sees_group(node, s.get("group", ""))]
    out.update(
        found=True,
        generated_ms=summary.get("generated_ms"),
        totals=summary.get("totals", {}) if viewer.sees_all_groups(node) else {},
        top_groups=seen,
        storms=storms,
    )
    return out
