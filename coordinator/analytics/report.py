"""The HTML report: one file with the totals, tables of the worst groups and storms, the
charts inlined (so the file stands alone) and links to the charts and Parquet tables."""

from __future__ import annotations

import base64
import html
from datetime import datetime
from pathlib import Path
from typing import Any

from .charts import CHARTS
from .job import Analysis, AnalysisOptions
from .locations import local_path

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""

GROUP_COLUMNS = (
    ("group", "group"),
    ("rebalances", "rebalances"),
    ("triggers", "triggers"),
    ("duration_p50_ms", "p50 ms"),
    ("duration_p95_ms", "p95 ms"),
    ("duration_max_ms", "max ms"),
    ("members_joined", "joined"),
    ("members_left", "left"),
    ("members_expired", "expired"),
    ("session_expiries", "session expiries"),
    ("members_evicted", "evicted"),
    ("static_members_replaced", "static replaced"),
    ("member_lifetime_p50_s", "median lifetime s"),
    ("churn_clients", "churniest clients (ended sessions)"),
    ("storms", "storms"),
    ("storm_kinds", "storm kinds"),
    ("assignment_skew", "skew (max/min)"),
    # KIP-848 consumer groups: no join or sync phases, target assignments and members
    # catching up with them instead.
    ("target_assignments", "target assignments"),
    ("reconciliations", "reconciliations"),
    ("reconcile_p50_ms", "reconcile p50 ms"),
    ("last_generation", "generation"),
)


def write(analysis: Analysis, charts: dict[str, Path], out: Path, options: AnalysisOptions) -> Path:
    t = analysis.totals
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>Rebalance report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Why do groups rebalance, and who makes them?</h1>",
        f"<p>{_e(t['entries'])} journal entries from {_e(t['nodes'])} node(s), "
        f"{_e(t['start'])} to {_e(t['end'])}.</p>",
        _table(
            ["groups", "rebalances", "joined", "left", "expired", "session expiries", "storms"],
            [
                [
                    t["groups"],
                    t["rebalances"],
                    t["members_joined"],
                    t["members_left"],
                    t["members_expired"],
                    t["session_expiries"],
                    t["storms"],
                ]
            ],
        ),
    ]
    if analysis.top_groups:
        parts.append("<h2>What is going on</h2><ul>")
        for g in analysis.top_groups:
            if g.get("rebalances"):
                parts.append(f"<li><b>{_e(g['group'])}</b>: {_e(g['story'])}</li>")
        parts.append("</ul>")
    total = sum(n for _, n in analysis.triggers) or 1
    parts.append("<h2>Why: rebalances by trigger</h2>")
    parts.append(
        _table(
            ["trigger", "rebalances", "share"],
            [[t, n, f"{100 * n / total:.1f}%"] for t, n in analysis.triggers],
        )
    )
    for name, title in CHARTS.items():
        path = charts[name]
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"<h2>{_e(title)}</h2>")
        parts.append(f"<a href='{_e(path.relative_to(out))}'>")  # charts are under --report
        parts.append(f"<img alt='{_e(title)}' src='data:image/png;base64,{data}'></a>")
    parts.append(f"<h2>Top {len(analysis.top_groups)} groups by rebalances</h2>")
    if not analysis.top_groups:
        parts.append("<p>No group rebalanced.</p>")
    parts.append(
        _table(
            [label for _, label in GROUP_COLUMNS],
            [
                [
                    _clients(g[key]) if key == "churn_clients" else g.get(key)
                    for key, _ in GROUP_COLUMNS
                ]
                for g in analysis.top_groups
            ],
        )
    )
    parts.append(
        f"<h2>Rebalance storms ({options.storm_threshold} or more rebalances within "
        f"{options.storm_window_s} s, until a {options.storm_gap_ms / 1000:g} s pause)</h2>"
    )
    if analysis.storms:
        parts.append(
            _table(
                [
                    "group",
                    "kind",
                    "start",
                    "end",
                    "seconds",
                    "rebalances",
                    "triggers",
                    "churniest client",
                    "its sessions",
                    "median lifetime s",
                    "member rejoining most",
                ],
                [
                    [
                        s["group"],
                        s["kind"],
                        s["start"],
                        s["end"],
                        s["seconds"],
                        s["rebalances"],
                        s["triggers"],
                        _who(s.get("churn_client_id"), s.get("churn_client_host")),
                        s["churn_client_sessions"],
                        s["member_lifetime_p50_s"],
                        _rejoining(s.get("top_member"), s.get("top_member_rebalances")),
                    ]
                    for s in analysis.storms
                ],
            )
        )
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2>Tables (Parquet)</h2><ul>")
    for name, location in analysis.tables.items():
        parts.append(f"<li><a href='{_e(_link(location, out))}'>{_e(name)}</a></li>")
    parts.append("</ul></body></html>")
    report = out / "report.html"
    report.write_text("\n".join(parts), encoding="utf-8")
    return report


def _rejoining(member: Any, rebalances: Any) -> str:
    """The member that rejoined most in a storm, when one did (a storm of new members or
    expiries has none)."""
    return f"{member} ({rebalances})" if member and rebalances else ""


def _who(client_id: Any, host: Any) -> str:
    return f"{client_id or '?'} on {host}" if host else str(client_id or "")


def _clients(clients: list[dict[str, Any]] | None) -> str:
    return "; ".join(
        f"{_who(c.get('client_id'), c.get('client_host'))}: {c.get('ended')}"
        for c in clients or []
        if c.get("ended")
    )


def _link(location: str, out: Path) -> str:
    """A table's location relative to the report when both are local, else as given."""
    path = local_path(location)
    if path is not None and path.resolve().is_relative_to(out.resolve()):
        return f"{path.resolve().relative_to(out.resolve())}/"
    return location


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return _e(moment(value))
    if isinstance(value, dict):
        return _e(", ".join(f"{k}: {v}" for k, v in sorted(value.items())))
    if isinstance(value, list):
        return _e(", ".join(str(v) for v in value))
    if isinstance(value, float):
        return _e(f"{value:.2f}")
    return _e(value)


def moment(at: datetime) -> str:
    """A time to the millisecond, as the journal has it (not Python's microseconds)."""
    return at.isoformat(sep=" ", timespec="milliseconds")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
