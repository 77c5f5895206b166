"""PNG charts of an ``Analysis`` (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

from .job import Analysis

CHARTS = {
    "rebalances_over_time.png": "Rebalances per minute (all groups, all nodes)",
    "rebalance_durations.png": "Rebalance duration distribution",
    "top_groups.png": "Groups with the most rebalances",
}


def draw(analysis: Analysis, out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in CHARTS}

    fig, ax = plt.subplots(figsize=(10, 4))
    minutes = [m for m, _ in analysis.per_minute]
    counts = [c for _, c in analysis.per_minute]
    ax.plot(range(len(minutes)), counts, marker="o" if len(minutes) < 60 else None)
    step = max(len(minutes) // 8, 1)
    ax.set_xticks(range(0, len(minutes), step))
    ax.set_xticklabels([m[:16] for m in minutes[::step]], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("rebalances / minute")
    ax.set_title(CHARTS["rebalances_over_time.png"])
    _save(fig, paths["rebalances_over_time.png"])

    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [_seconds(lo) for lo, _ in analysis.duration_histogram]
    ax.bar(labels, [n for _, n in analysis.duration_histogram])
    ax.set_xlabel("duration at least (start to Stable or Empty)")
    ax.set_ylabel("rebalances")
    ax.set_title(CHARTS["rebalance_durations.png"])
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    _save(fig, paths["rebalance_durations.png"])

    fig, ax = plt.subplots(figsize=(10, max(3, 0.3 * len(analysis.top_groups))))
    top = list(reversed(analysis.top_groups))
    ax.barh([str(g["group"]) for g in top], [g["rebalances"] for g in top])
    ax.set_xlabel("rebalances")
    ax.set_title(CHARTS["top_groups.png"])
    ax.tick_params(axis="y", labelsize=8)
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
