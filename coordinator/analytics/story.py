"""One sentence per top group saying what is going on, from its ``group_summary`` row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

#: How a session's end reads, by outcome.
VERBS = {
    "left": "joined and left",
    "expired": "joined and expired",
    "evicted": "joined and was evicted",
    "replaced": "restarted (static member replaced)",
}


def sentence(g: dict[str, Any]) -> str:
    """ "client `etl-7` on host h3 joined and left 8 times in 20 s (median lifetime 1.5 s)",
    else the member that keeps rebalancing it, else its triggers."""
    parts: list[str] = []
    clients = g.get("churn_clients") or []
    top = clients[0] if clients else None
    member = g.get("top_member")
    churned = (top.get("ended") or 0) if top is not None else 0
    repeated = (member.get("rebalances") or 0) if member is not None else 0
    # Whichever explains more rebalances: a client coming and going, or one member.
    if top is not None and churned >= 2 and churned >= repeated:
        outcomes = {k: top.get(k) or 0 for k in VERBS}
        verb = VERBS[max(outcomes, key=lambda k: outcomes[k])]
        span = _seconds_between(top.get("first_joined"), top.get("last_ended"))
        host = f" on host {top['client_host']}" if top.get("client_host") else ""
        within = f" in {_num(span)} s" if span is not None else ""
        lifetime = f"(median lifetime {_num(top.get('lifetime_p50_s'))} s)"
        if top.get("came_back", True):
            who = f"client `{top.get('client_id')}`{host}"
            parts.append(f"{who} {verb} {top['ended']} times{within} {lifetime}")
        else:  # several consumers with one client id, side by side
            who = f"{top['ended']} consumers of client `{top.get('client_id')}`{host}"
            parts.append(f"{who} {verb}{within} {lifetime}")
    elif member is not None and repeated >= 2:
        what = (member.get("trigger") or "rebalance").replace("_", " ")
        parts.append(
            f"member `{member['member']}` caused {member['rebalances']} rebalances ({what}) "
            f"in {_num(member.get('seconds'))} s"
        )
    elif (g.get("members_expired") or 0) >= 2:
        parts.append(f"{g['members_expired']} members expired")
    triggers: dict[str, int] = g.get("triggers") or {}
    if triggers:
        trigger, n = max(sorted(triggers.items()), key=lambda kv: kv[1])
        total = g.get("rebalances", 0)
        plural = "s" if total != 1 else ""
        if n == total:
            parts.append(f"{total} rebalance{plural}: {'all ' if total > 1 else ''}{trigger}")
        else:
            parts.append(f"{total} rebalance{plural}, most of them {trigger} ({n})")
    storms = g.get("storms") or 0
    if storms:
        kinds = ", ".join(g.get("storm_kinds") or [])
        parts.append(f"{storms} storm{'s' if storms > 1 else ''} ({kinds})")
    return "; ".join(parts) if parts else "no rebalances"


def _seconds_between(start: Any, end: Any) -> float | None:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds()
    return None


def _num(value: Any) -> str:
    if value is None:
        return "?"
    x = float(value)
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}".removesuffix(".0")
