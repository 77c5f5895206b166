"""PNG charts of an ``Analysis`` (matplotlib, no display needed)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from .job import Analysis

CHARTS = {
    "rebalances_over_time.png": "Rebalances per minute (all groups, all nodes)",
    "rebalance_durations.png": "Rebalance duration distribution",
    "top_groups.png": "Groups with the most rebalances, by trigger",
}


def draw(analysis: Analysis, out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in CHARTS}

    fig, ax = plt.subplots(figsize=(10, 4))
    minutes = [datetime.fromisoformat(m) for m, _ in analysis.per_minute]
    counts = [c for _, c in analysis.per_minute]
    marker = "o" if len(minutes) < 60 else None
    ax.plot(minutes, counts, marker=marker, linewidth=0.8)  # type: ignore[arg-type]
    ax.set_ylabel("rebalances / minute")
    ax.set_title(CHARTS["rebalances_over_time.png"])
    fig.autofmt_xdate()
    _save(fig, paths["rebalances_over_time.png"])

    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [_seconds(lo) for lo, _ in analysis.duration_histogram]
    ax.bar(labels, [n for _, n in analysis.duration_histogram])
    ax.set_xlabel("duration at least (start to Stable or Empty)")
    ax.set_ylabel("rebalances")
    ax.set_title(CHARTS["rebalance_durations.png"])
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    _save(fig, paths["rebalance_durations.png"])

    # Stacked by trigger: the chart says why, not only how often.
    fig, ax = plt.subplots(figsize=(10, max(3, 0.3 * len(analysis.top_groups))))
    top = list(reversed(analysis.top_groups))
    names = [str(g["group"]) for g in top]
    triggers = sorted({t for g in top for t in (g.get("triggers") or {})})
    left = [0] * len(top)
    for trigger in triggers:
        widths = [(g.get("triggers") or {}).get(trigger, 0) for g in top]
        ax.barh(names, widths, left=left, label=trigger)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("rebalances")
    ax.set_title(CHARTS["top_groups.png"])
    ax.tick_params(axis="y", labelsize=8)
    if triggers:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, paths["top_groups.png"])
    return paths


def _save(fig: object, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(path, dpi=100)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]


def _seconds(lower_s: float) -> str:
    if lower_s == 0:
        return "0"
    return f"{lower_s * 1000:g}ms" if lower_s < 1 else f"{lower_s:g}s"
