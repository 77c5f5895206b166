"""PNG charts of an ``Analysis`` (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

from .job import Analysis

CHARTS = {
    "rebalances_over_time.png": "Rebalances over time (all groups, all nodes), by trigger",
    "rebalance_durations.png": "Rebalance duration distribution",
    "top_groups.png": "Groups with the most rebalances, by trigger",
    "group_timelines.png": "States and members of the groups with the most rebalances",
}

STATE_COLOURS = {
    "Empty": "#dddddd",
    "PreparingRebalance": "#f4a582",
    "CompletingRebalance": "#fddbc7",
    "Stable": "#d1e5f0",
    # KIP-848 consumer groups: a new target assignment, members catching up with it.
    "Assigning": "#b2abd2",
    "Reconciling": "#e6f5d0",
}


def draw(analysis: Analysis, out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in CHARTS}
    _over_time(plt, analysis, paths["rebalances_over_time.png"])

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

    _timelines(plt, analysis, paths["group_timelines.png"])
    return paths


def zero_filled(analysis: Analysis) -> tuple[list[datetime], dict[str, list[int]]]:
    """Every bin from the first to the last rebalance, with 0 where there were none, and
    the rebalances per trigger in each."""
    if not analysis.over_time:
        return [], {}
    width = timedelta(seconds=analysis.bin_seconds)
    counts = {(datetime.fromisoformat(b), t): n for b, t, n in analysis.over_time}
    first = min(b for b, _ in counts)
    last = max(b for b, _ in counts)
    bins = [first + i * width for i in range(int((last - first) / width) + 1)]
    triggers = sorted({t for _, t in counts})
    return bins, {t: [counts.get((b, t), 0) for b in bins] for t in triggers}


def _over_time(plt: Any, analysis: Analysis, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 4))
    bins, series = zero_filled(analysis)
    width = timedelta(seconds=analysis.bin_seconds)
    bottom = [0] * len(bins)
    for trigger, counts in series.items():
        ax.bar(bins, counts, width=width, bottom=bottom, align="edge", label=trigger)
        bottom = [a + b for a, b in zip(bottom, counts, strict=True)]
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"rebalances per {_seconds(analysis.bin_seconds)}")
    ax.set_title(CHARTS["rebalances_over_time.png"])
    if series:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _time_axis(ax)
    fig.autofmt_xdate()
    _save(fig, path)


def _timelines(plt: Any, analysis: Analysis, path: Path) -> None:
    groups = [g for g, rows in analysis.timelines.items() if rows]
    fig, axes = plt.subplots(
        max(len(groups), 1), 1, figsize=(10, 1.6 * max(len(groups), 1)), squeeze=False
    )
    for ax, group in zip([a[0] for a in axes], groups, strict=False):
        rows = analysis.timelines[group]
        end = rows[-1]["at"]
        changes = [(r["at"], r["state"]) for r in rows if r["state"] is not None]
        # One collection of bands per state, not a patch per change: thousands of changes
        # drawn one by one took matplotlib tens of seconds.
        bands: dict[str, list[tuple[datetime, timedelta]]] = {}
        for (at, state), nxt in zip(changes, [*changes[1:], (end, None)], strict=True):
            bands.setdefault(state, []).append((at, nxt[0] - at))
        for state, spans in bands.items():
            ax.broken_barh(
                spans, (0, 1), transform=ax.get_xaxis_transform(),
                color=STATE_COLOURS.get(state, "#ffffff"), linewidth=0,
            )  # fmt: skip
        sizes = [(r["at"], r["members"]) for r in rows if r["members"] is not None]
        if sizes:
            ax.step([t for t, _ in sizes], [n for _, n in sizes], where="post", color="black")
        ax.set_ylim(bottom=0, top=max([n for _, n in sizes] + [1]) + 1)
        ax.set_ylabel("members", fontsize=8)
        ax.set_title(str(group), fontsize=9, loc="left")
        _time_axis(ax)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=colour, label=state)
        for state, colour in STATE_COLOURS.items()
    ]
    fig.legend(handles=handles, fontsize=8, loc="upper right")
    fig.suptitle(CHARTS["group_timelines.png"], fontsize=10)
    _save(fig, path)


def tick_label(at: datetime, span_s: float) -> str:
    """A time axis tick: the time of day (the date too over a day or more), milliseconds
    only when the tick has some (matplotlib's own labels for short spans read like
    ``43:42.550000``)."""
    if span_s >= 86400:
        return at.strftime("%m-%d %H:%M")
    ms = at.microsecond // 1000
    return at.strftime("%H:%M:%S") + (f".{ms:03d}" if ms else "")


def _time_axis(ax: Any) -> None:
    from matplotlib import dates, ticker

    num2date = cast(Callable[[float], datetime], dates.num2date)  # days since the epoch

    def label(x: float, _pos: int | None = None) -> str:
        low, high = ax.get_xlim()
        return tick_label(num2date(x), (high - low) * 86400)

    ax.xaxis.set_major_formatter(ticker.FuncFormatter(label))


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _seconds(lower_s: float) -> str:
    if lower_s == 0:
        return "0"
    if lower_s < 1:
        return f"{lower_s * 1000:g}ms"
    if lower_s >= 3600 and lower_s % 3600 == 0:
        return f"{lower_s / 3600:g}h"
    if lower_s >= 60 and lower_s % 60 == 0:
        return f"{lower_s / 60:g}min"
    return f"{lower_s:g}s"
