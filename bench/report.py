"""The report of a ``python -m bench`` run: JSON, a Markdown table per part, PNG charts, and
where we stand against each target of the issue."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

DEPTH64 = "1 connection, depth 64"
DEPTH1 = "1 connection, depth 1"


def _f(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def heartbeat_md(hb: dict[str, Any]) -> list[str]:
    lines = [
        "## Heartbeats (members of Stable groups)",
        "",
        "| scenario | server | heartbeats/s | p50 ms | p99 ms | server CPU (cores) "
        "| server CPU µs/heartbeat | generator CPU (cores) | generator processes "
        "| vs Tansu | vs ceiling |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario, by_server in hb["summary"].items():
        tansu = by_server.get("tansu", {}).get("rate_per_s")
        ceiling = by_server.get("ceiling", {}).get("rate_per_s")
        for name, row in by_server.items():
            rate = row["rate_per_s"]
            lines.append(
                f"| {scenario} | {name} | {_f(rate)} | {_f(row['p50_ms'], 3)} "
                f"| {_f(row['p99_ms'], 3)} | {_f(row['server_cpu_cores'])} "
                f"| {_f(_ratio(1e6 * row['server_cpu_cores'], rate), 1)} "
                f"| {_f(row['generator_cpu_cores'])} | {int(row['generator_processes'])} "
                f"| {_f(_ratio(rate, tansu))} | {_f(_ratio(rate, ceiling))} |"
            )
    return lines


def rebalance_md(rb: dict[str, Any]) -> list[str]:
    lines = [
        "## Rebalance (one connection per member)",
        "",
        "| server | event | members | barrier to last SyncGroup s | server CPU s "
        "| server CPU µs/member | generator CPU s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in rb["summary"].items():
        for row in rows:
            event = "N join a fresh group" if row["mode"] == "join" else "1 of N leaves"
            seconds = _f(row.get("seconds"), 3) if "seconds" in row else row.get("failed", "-")
            lines.append(
                f"| {name} | {event} | {row['members']} | {seconds} "
                f"| {_f(row.get('server_cpu_s'))} | {_f(row.get('server_cpu_us_per_member'), 0)} "
                f"| {_f(row.get('generator_cpu_s'))} |"
            )
    return lines


def scale_md(sc: dict[str, Any]) -> list[str]:
    return [
        "## Scale (daemon)",
        "",
        f"{sc['members']:,} members in {sc['groups']:,} groups of {sc['per_group']}, each "
        f"heartbeating every {sc['interval_s']:g} s over {sc['heartbeat_connections']} "
        f"connections from {sc['generator_processes']} generator processes "
        f"(formation: {sc['formation_s']:.1f} s).",
        "",
        "| heartbeats/s | p50 ms | p99 ms | server CPU % | generator CPU (cores) "
        "| RSS empty MB | RSS idle members MB | RSS under load MB | RSS bytes per idle member |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {_f(sc['rate_per_s'])} | {_f(sc['p50_ms'], 3)} | {_f(sc['p99_ms'], 3)} "
        f"| {_f(sc['server_cpu_percent'], 1)} | {_f(sc['generator_cpu_cores'])} "
        f"| {_f(sc['rss_empty_mb'], 1)} | {_f(sc['rss_idle_mb'], 1)} "
        f"| {_f(sc['rss_under_load_mb'], 1)} | {_f(sc['rss_bytes_per_idle_member'], 0)} |",
    ]


def _table(rows: list[dict[str, Any]]) -> list[str]:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_f(r[k]) for k in keys) + " |" for r in rows]
    return lines


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, where we stand, met?) for every target that this run measured."""
    out: list[tuple[str, str, bool | None]] = []
    hb = result.get("heartbeat", {}).get("summary", {})
    for scenario, want in ((DEPTH64, 3.0), (DEPTH1, 1.5)):
        rows = hb.get(scenario, {})
        r = _ratio(
            rows.get("daemon", {}).get("rate_per_s"), rows.get("tansu", {}).get("rate_per_s")
        )
        if r is not None:
            out.append((f"heartbeats {scenario}: >= {want}x Tansu", f"{r:.2f}x", r >= want))
    rows = hb.get(DEPTH64, {})
    r = _ratio(rows.get("daemon", {}).get("rate_per_s"), rows.get("ceiling", {}).get("rate_per_s"))
    if r is not None:
        out.append((f"heartbeats {DEPTH64}: >= 50% of the ceiling", f"{100 * r:.0f}%", r >= 0.5))
    daemon_rb = result.get("rebalance", {}).get("summary", {}).get("daemon", [])
    for n, limit in ((1000, 0.25), (5000, 1.5)):
        row = next((x for x in daemon_rb if x["members"] == n and x["mode"] == "join"), None)
        if row and "seconds" in row:
            out.append(
                (
                    f"{n:,} members Stable within {limit:g} s",
                    f"{row['seconds']:.3f} s",
                    row["seconds"] <= limit,
                )
            )
    joins = [x for x in daemon_rb if x["mode"] == "join" and "seconds" in x and x["members"] >= 100]
    if len(joins) >= 2:
        per = [x["server_cpu_us_per_member"] for x in joins]
        spread = max(per) / min(per) if min(per) else float("inf")
        out.append(
            (
                "rebalance cost linear in N (server CPU per member roughly constant)",
                ", ".join(f"{x['members']}: {x['server_cpu_us_per_member']:.0f} µs" for x in joins),
                spread <= 2.0,
            )
        )
    sc = result.get("scale")
    if sc:
        mb_100k = sc["rss_empty_mb"] + sc["rss_bytes_per_idle_member"] * 100_000 / 2**20
        out.append(
            (
                "100,000 idle members in <= 400 MB RSS",
                f"{sc['rss_idle_mb']:.0f} MB with {sc['members']:,} members"
                + ("" if sc["members"] == 100_000 else f" (extrapolated: {mb_100k:.0f} MB)"),
                mb_100k <= 400,
            )
        )
        out.append(
            (
                "heartbeat p99 < 5 ms at 33,000 heartbeats/s",
                f"p99 {sc['p99_ms']:.2f} ms at {sc['rate_per_s']:,.0f}/s",
                sc["p99_ms"] < 5 and sc["rate_per_s"] >= 30_000,
            )
        )
    return out


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        "# Benchmarks",
        "",
        f"Python {meta['python']} on {meta['machine']}, {meta['cpus']} CPUs (shared); "
        f"{meta['plan']['runs']} runs, medians; Tansu: {meta['tansu'] or 'not run'}; "
        f"wall time {meta.get('wall_s', 0):.0f} s.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for target, stands, met in targets(result):
        lines.append(f"| {target} | {stands} | {'yes' if met else 'no'} |")
    lines.append("")
    if "heartbeat" in result:
        lines += [*heartbeat_md(result["heartbeat"]), ""]
    if "rebalance" in result:
        lines += [*rebalance_md(result["rebalance"]), ""]
    if "scale" in result:
        lines += [*scale_md(result["scale"]), ""]
    if result.get("codec"):
        lines += ["## Codecs (µs per call, ours vs kio)", "", *_table(result["codec"]), ""]
    if result.get("durable"):
        lines += ["## Durable commits (SQLite vs memory)", "", *_table(result["durable"]), ""]
    return "\n".join(lines)


def charts(result: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []
    hb = result.get("heartbeat", {}).get("summary")
    if hb:
        scenarios = list(hb)
        names = sorted({n for rows in hb.values() for n in rows})
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            xs = [k + i * width for k in range(len(scenarios))]
            axes[0].bar(
                xs, [hb[s].get(name, {}).get("rate_per_s", 0) for s in scenarios], width, label=name
            )
            axes[1].bar(
                xs, [hb[s].get(name, {}).get("p99_ms", 0) for s in scenarios], width, label=name
            )
        for ax, title in zip(axes, ("heartbeats/s", "p99 latency ms"), strict=True):
            ax.set_xticks(
                [k + 0.4 - width / 2 for k in range(len(scenarios))], scenarios, fontsize=8
            )
            ax.set_title(title)
            ax.set_yscale("log")
            ax.legend()
        fig.tight_layout()
        fig.savefig(out / "heartbeat.png", dpi=110)
        plt.close(fig)
        written.append("heartbeat.png")
    rb = result.get("rebalance", {}).get("summary")
    if rb:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for name, rows in rb.items():
            for mode in ("join", "leave"):
                pts = [x for x in rows if x["mode"] == mode and "seconds" in x]
                if not pts:
                    continue
                label = f"{name}: {'N join' if mode == 'join' else '1 of N leaves'}"
                axes[0].plot(
                    [x["members"] for x in pts], [x["seconds"] for x in pts], "o-", label=label
                )
                # CPU is read in 10 ms clock ticks: a 0 means "under a tick", not plotted.
                cpu = [x for x in pts if x["server_cpu_s"] > 0]
                axes[1].plot(
                    [x["members"] for x in cpu], [x["server_cpu_s"] for x in cpu], "o-", label=label
                )
        daemon = [x for x in rb.get("daemon", []) if x["mode"] == "join" and "seconds" in x]
        if daemon:
            top = max(daemon, key=lambda x: x["members"])
            ns = [x["members"] for x in daemon]
            axes[1].plot(
                ns,
                [top["server_cpu_s"] * n / top["members"] for n in ns],
                "k:",
                label="linear in N (through daemon's largest)",
            )
        for ax, title in zip(
            axes, ("barrier to last SyncGroup (s)", "server CPU (s)"), strict=True
        ):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("members")
            ax.set_title(title)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "rebalance.png", dpi=110)
        plt.close(fig)
        written.append("rebalance.png")
    return written


def write(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "bench.md").write_text(markdown(result) + "\n")
    charts(result, out)
