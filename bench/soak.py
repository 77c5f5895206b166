"""Soak: many members in many groups for a long time, with random joins, leaves and kills.

    python -m bench.soak [--minutes 30] [--groups 200] [--per-group 10]

A daemon process (JSON logs) serves ``groups x per-group`` members of the project's own
client. Every few seconds a random member leaves (LeaveGroup), is killed (its tasks stop, no
LeaveGroup: the session must expire it) or a new one joins. At the end the daemon's log is
read: a *spurious* expiry is a session timeout of a member that was never killed. The
daemon's RSS is sampled every 10 s. Writes ``bench/results/soak.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coordinator.client.member import GroupMember
from coordinator.client.pool import ConnectionPool

RESULTS = Path(__file__).parent / "results"
SESSION_MS = 10000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _member(bootstrap: str, group: str, pool: ConnectionPool) -> GroupMember:
    return GroupMember(
        bootstrap,
        group,
        protocols=["range"],
        topics=["t"],
        pool=pool,
        heartbeat_interval_ms=3000,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=30000,
    )


async def _run(bootstrap: str, pid: int, args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    pool = ConnectionPool()
    groups = [f"soak-{g}" for g in range(args.groups)]
    members = [_member(bootstrap, g, pool) for g in groups for _ in range(args.per_group)]
    await asyncio.gather(*(m.start(None) for m in members))
    killed: set[str] = set()
    actions = {"leave": 0, "kill": 0, "join": 0}
    rss: list[tuple[float, float]] = []
    started = time.monotonic()
    end = started + args.minutes * 60
    next_sample = started
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_sample:
            rss.append((round(now - started, 1), round(_rss_mb(pid), 1)))
            next_sample += 10
        await asyncio.sleep(rng.uniform(0.5, 2 * args.churn_interval_s))
        action = rng.choice(list(actions))
        actions[action] += 1
        if action == "join":
            m = _member(bootstrap, rng.choice(groups), pool)
            await m.start(None)
            members.append(m)
            continue
        victim = members.pop(rng.randrange(len(members)))
        if action == "kill":
            if victim.member_id:
                killed.add(victim.member_id)
            await victim.close(leave=False)
        else:
            await victim.close()
    await asyncio.gather(*(m.close() for m in members))
    await pool.close()
    return {
        "actions": actions,
        "killed": sorted(killed),
        "rss_mb": rss,
        "members_at_end": len(members),
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--per-group", type=int, default=10)
    parser.add_argument("--churn-interval-s", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "daemon.jsonl"
        with open(log_path, "wb") as log:
            daemon = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "coordinator.commands.cli",
                    "serve",
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--data-dir",
                    str(Path(tmp) / "data"),
                    "--topic",
                    "t:20",
                    "--group-initial-rebalance-delay-ms",
                    "0",
                    "--log-format",
                    "json",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    try:
                        socket.create_connection(("127.0.0.1", port), 0.2).close()
                        break
                    except OSError:
                        time.sleep(0.05)
                outcome = asyncio.run(_run(f"127.0.0.1:{port}", daemon.pid, args))
            finally:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(30)
        expiries = []
        for line in log_path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "MemberRemoved" and "timeout" in str(event.get("reason")):
                expiries.append(event["member_id"])
    killed = set(outcome["killed"])  # type: ignore[arg-type]
    spurious = [m for m in expiries if m not in killed]
    rss = [mb for _t, mb in outcome["rss_mb"]]  # type: ignore[attr-defined]
    half = len(rss) // 2
    summary = {
        "minutes": args.minutes,
        "members": args.groups * args.per_group,
        "groups": args.groups,
        "actions": outcome["actions"],
        "expiries": len(expiries),
        "expected_expiries": len(killed),
        "spurious_expiries": len(spurious),
        "rss_first_half_median_mb": statistics.median(rss[:half]) if half else None,
        "rss_second_half_median_mb": statistics.median(rss[half:]) if rss else None,
        "rss_max_mb": max(rss) if rss else None,
        "rss_samples": outcome["rss_mb"],
    }
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "soak.json").write_text(json.dumps(summary, indent=2))
        (RESULTS / "soak.md").write_text(
            "# Soak\n\n"
            f"{summary['members']} members in {summary['groups']} groups for "
            f"{args.minutes:g} minutes; churn {summary['actions']}.\n\n"
            "| spurious expiries | expiries (killed members) | RSS median 1st half MB "
            "| RSS median 2nd half MB | RSS max MB |\n|---:|---:|---:|---:|---:|\n"
            f"| {summary['spurious_expiries']} | {summary['expiries']} "
            f"({summary['expected_expiries']}) | {summary['rss_first_half_median_mb']} "
            f"| {summary['rss_second_half_median_mb']} | {summary['rss_max_mb']} |\n"
        )
    print(json.dumps({k: v for k, v in summary.items() if k != "rss_samples"}))
    return summary


if __name__ == "__main__":
    main()
