"""The console with 10,000 groups: how long its pages take and how big they are.

    python -m bench.console [--quick] [--groups N] [--no-write]

A daemon in this process (memory store, console on a free port) gets N consumer groups,
each formed through the state machine as a client forms it: a member joins (JoinGroup with
a consumer-protocol subscription), syncs an assignment of 6 partitions and commits an
offset, so every group has members, an assignment, an offset and a rebalance in its
timeline. Then each page and API call is fetched ``--repeats`` times from another thread
(urllib): wall time from request to the whole body (the console renders on the daemon's
loop, so this is also how long the loop is busy), and the body's size. Target (issue 18):
the groups page under 1 s and under 5 MB with 10,000 groups. Writes
``bench/results/console.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

from coordinator.console.settings import ConsoleSettings
from coordinator.group.config import GroupConfig
from coordinator.group.requests import (
    JoinGroupInput,
    OffsetCommitInput,
    PartitionCommit,
    SyncGroupInput,
    TopicCommit,
)
from coordinator.handlers.outcome import Pending
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)

RESULTS = Path(__file__).parent / "results"
TARGET_S = 1.0
TARGET_BYTES = 5 * 1024 * 1024

#: (name, path): the pages first, then the API; {g} is a group in the middle.
REQUESTS = (
    ("groups page (first 50 by id)", "/groups"),
    ("groups page, sorted by last rebalance", "/groups?sort=last_rebalance&order=desc"),
    ("groups page, sorted by members", "/groups?sort=members&order=desc"),
    ("groups page, searched", "/groups?q=group-0042"),
    ("groups page, last page", "/groups?page=100000"),
    ("overview page", "/"),
    ("group page", "/group?id={g}"),
    ("topics page", "/topics"),
    ("/api/groups (50)", "/api/groups"),
    ("/api/groups (500, sorted by rebalances)", "/api/groups?page_size=500&sort=rebalances_1h"),
    ("/api/overview", "/api/overview"),
    ("/api/groups/{g}", "/api/groups/{g}"),
)
SUBSCRIPTION = encode_subscription(ConsumerProtocolSubscription(topics=["orders"]))
ASSIGNMENT = encode_assignment(
    ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="orders", partitions=list(range(6)))]
    )
)


async def form_groups(server: Server, count: int) -> None:
    """``count`` Stable consumer groups of one member each, with one committed offset."""
    runtime = server.runtime
    assert runtime is not None
    joins: list[tuple[str, Pending]] = []
    for n in range(count):
        group = f"group-{n:05d}"
        token = Pending()
        join = JoinGroupInput(
            group, "", None, "bench", "/127.0.0.1", 30_000, 30_000, "consumer",
            [("range", SUBSCRIPTION)], 3,  # v3: no KIP-394 second round
        )  # fmt: skip
        runtime.apply(runtime.groups.join_group(token, join, runtime.now_ms()))
        joins.append((group, token))
        if n % 500 == 0:
            await asyncio.sleep(0)  # the initial-delay timers (0 ms) complete the joins
    await asyncio.sleep(0.2)
    for group, token in joins:
        assert token.answered, group
        joined = token.result
        sync = SyncGroupInput(
            group, joined.generation_id, joined.member_id, None, "consumer", "range",
            [(joined.member_id, ASSIGNMENT)], 3,
        )  # fmt: skip
        runtime.apply(runtime.groups.sync_group(Pending(), sync, runtime.now_ms()))
        commit = OffsetCommitInput(
            group, joined.generation_id, joined.member_id, None, -1,
            [TopicCommit("orders", [PartitionCommit(0, 42, metadata="bench")])], 8,
        )  # fmt: skip
        runtime.apply(runtime.groups.commit_offsets(Pending(), commit, runtime.now_ms()))
    await asyncio.sleep(0.1)
    stable = sum(g.state.value == "Stable" for g in runtime.groups.groups.values())
    assert stable == count, f"{stable} of {count} groups are Stable"


def fetch(url: str) -> tuple[float, int, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as resp:
        body = resp.read()
        status = resp.status
    return time.perf_counter() - started, len(body), status


async def measure(count: int, repeats: int) -> dict[str, Any]:
    settings = Settings(
        listen=("127.0.0.1", 0),
        store="memory",
        topics=(("orders", 6),),
        group=GroupConfig(initial_rebalance_delay_ms=0, max_groups=max(count, 1) + 10),
        console=ConsoleSettings(listen=("127.0.0.1", 0)),
    )
    server = Server(settings)
    await server.start()
    try:
        started = time.perf_counter()
        await form_groups(server, count)
        formed_s = time.perf_counter() - started
        assert server.console is not None
        base = f"http://127.0.0.1:{server.console.port}"
        middle = f"group-{count // 2:05d}"
        rows = []
        for name, path in REQUESTS:
            url = base + path.format(g=middle)
            times, sizes = [], []
            for _ in range(repeats):
                took, size, status = await asyncio.to_thread(fetch, url)
                assert status == 200, (url, status)
                times.append(took)
                sizes.append(size)
            rows.append(
                {
                    "request": name,
                    "path": path,
                    "median_ms": round(statistics.median(times) * 1000, 1),
                    "max_ms": round(max(times) * 1000, 1),
                    "bytes": max(sizes),
                }
            )
    finally:
        await server.stop()
    groups_pages = [r for r in rows if r["request"].startswith("groups page")]
    return {
        "groups": count,
        "repeats": repeats,
        "formed_s": round(formed_s, 2),
        "requests": rows,
        "groups_page_worst_median_ms": max(r["median_ms"] for r in groups_pages),
        "groups_page_largest_bytes": max(r["bytes"] for r in groups_pages),
        "targets_met": all(
            r["median_ms"] < TARGET_S * 1000 and r["bytes"] < TARGET_BYTES for r in groups_pages
        ),
        "python": platform.python_version(),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# The console with {result['groups']:,} groups",
        "",
        f"`python -m bench.console`: one daemon in-process (memory store), {result['groups']:,}"
        " Stable consumer groups of one member each (6 partitions assigned, one offset"
        f" committed), formed through the state machine in {result['formed_s']} s. Each"
        f" request {result['repeats']} times from another thread; wall time to the whole body"
        f" (Python {result['python']}, 2 shared cores).",
        "",
        "| request | median | max | size |",
        "|---|---:|---:|---:|",
    ]
    for r in result["requests"]:
        lines.append(
            f"| {r['request']} | {r['median_ms']} ms | {r['max_ms']} ms |"
            f" {r['bytes'] / 1024:.1f} KiB |"
        )
    met = "met" if result["targets_met"] else "NOT met"
    lines += [
        "",
        f"Target (issue 18): every groups page under 1 s and 5 MB: **{met}** (slowest median"
        f" {result['groups_page_worst_median_ms']} ms, largest"
        f" {result['groups_page_largest_bytes'] / 1024:.1f} KiB). The groups table is"
        " paginated on the server, so a page's size does not grow with the number of groups;"
        " its time does (every group is filtered, and sorted by anything but the id, on each"
        " request).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--groups", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    count = args.groups or (200 if args.quick else 10_000)
    repeats = args.repeats or (2 if args.quick else 7)
    result = asyncio.run(measure(count, repeats))
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "console.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "console.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
