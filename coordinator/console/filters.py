"""Jinja2 filters: how times, durations and owners look on the pages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jinja2
from markupsafe import Markup, escape

#: Owner colours of the partition picture: distinguishable, and each with 3:1 contrast or
#: more against the white page (WCAG 1.4.11 for graphics).
PALETTE = (
    "#1f5fa8",
    "#b3471b",
    "#2e7d32",
    "#7b3fa0",
    "#a0216b",
    "#00707a",
    "#8a6d00",
    "#5d4037",
    "#3949ab",
    "#c62828",
)
UNOWNED = "#767676"


def duration(ms: int | float | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{int(ms)} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:.1f} h"


def ago(ms: int | None, now_ms: int) -> str:
    if not ms:
        return "-"
    return f"{duration(max(now_ms - ms, 0))} ago"


def clock(ms: int | None) -> str:
    """A UTC time of day (the date when it is not today)."""
    if not ms:
        return "-"
    at = datetime.fromtimestamp(ms / 1000, UTC)
    today = datetime.now(UTC).date()
    return at.strftime("%H:%M:%S" if at.date() == today else "%Y-%m-%d %H:%M:%S") + " UTC"


def iso(ms: int | None) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def colour(index: int | None) -> str:
    return UNOWNED if index is None else PALETTE[index % len(PALETTE)]


def since(ms: int | None, now_ms: int) -> str:
    return "-" if not ms else duration(max(now_ms - ms, 0))


def event_detail(e: dict[str, Any]) -> str:
    """One line about a journal entry (docs/journal.md)."""
    kind = e.get("type")
    if kind == "rebalance_started":
        return f"{e['trigger']}: {e['reason']}"
    if kind == "join_completed":
        join = duration(e["duration_ms"])
        return f"generation {e['generation']}, {e['members']} members, join {join}"
    if kind == "sync_completed":
        return f"generation {e['generation']}, sync {duration(e['duration_ms'])}"
    if kind == "state_changed":
        return f"{e['from']} → {e['to']}"
    if kind in ("member_joined",):
        return f"{e['member']} ({e['client_id']}, {e['client_host']})"
    if kind in ("member_left", "member_expired", "member_evicted"):
        return f"{e['member']}: {e.get('detail') or ''}"
    if kind in ("offsets_committed", "offsets_expired"):
        return f"{e['count']} partition{'' if e['count'] == 1 else 's'}"
    if kind == "target_assignment_computed":  # KIP-848
        return (
            f"epoch {e['generation']}, {e['members']} members, {e['protocol']}:"
            f" {e['count']} target{'' if e['count'] == 1 else 's'} changed"
        )
    if kind == "member_reconciled":
        took = "" if e["duration_ms"] is None else f" after {duration(e['duration_ms'])}"
        return f"{e['member']} at epoch {e['generation']}{took}"
    if kind in ("partitions_acquired", "partitions_released", "partitions_fenced"):  # a cluster
        listed = ", ".join(map(str, e["partitions"]))
        detail = f"coordinator partitions {listed}; {e['owned']} owned now"
        if kind == "partitions_acquired":
            return f"{detail} ({e['groups']} groups loaded in {duration(e['load_ms'])})"
        return f"{detail} ({e['reason']})" if kind == "partitions_released" else detail
    if kind == "group_deleted":
        return str(e.get("reason", ""))
    return ""


def code_spans(text: str | None) -> Markup:
    """A sentence from the analysis, its `quoted` names as code (as in its report), the
    rest escaped."""
    parts = str(escape(text or "")).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: shown as it is
        return Markup(str(escape(text or "")))
    return Markup(
        "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))
    )


def install(env: jinja2.Environment) -> None:
    env.filters.update(
        code_spans=code_spans,
        duration=duration,
        ago=ago,
        since=since,
        clock=clock,
        iso=iso,
        colour=colour,
        event_detail=event_detail,
    )
