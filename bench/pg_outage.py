"""A PostgreSQL outage against a cluster (issue 31's acceptance: "a 20 s PostgreSQL outage:
at most one rebalance per affected group, CPU and journal flat").

    python -m bench.pg_outage [--outage-s 20] [--groups 6] [--nodes 2]

Two nodes (lease 3 s) and ``--groups`` groups of two kafka-python members (session 10 s,
one member committing every 0.7 s). After the groups are stable: a quiet period of
``--outage-s``, then the database stopped (fast shutdown) for ``--outage-s`` and started
again, then the same time again to recover. For each period: rebalances per group (the
event journal's ``rebalance_started``), each node's CPU seconds, the bytes each node wrote
to its log (what journald would keep) and to its event journal.

Writes ``bench/results/pg_outage.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import threading
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from tests.integration.clients import KafkaPythonMember, Member
from tests.integration.conftest import Daemon
from tests.postgres_server import postgres_server

from .servers import cpu_seconds

RESULTS = Path(__file__).parent / "results"
LEASE_MS = 3000


def node_args(url: str, node_id: int, journal: Path) -> tuple[str, ...]:
    return (
        "--store", "postgres", "--database-url", url, "--node-id", str(node_id),
        "--lease-timeout-ms", str(LEASE_MS), "--lease-renew-interval-ms", "500",
        "--offsets-topic-num-partitions", "10", "--topic", "t:4",
        "--group-initial-rebalance-delay-ms", "0", "--journal-dir", str(journal),
    )  # fmt: skip


def journal_entries(journal: Path) -> list[dict[str, Any]]:
    entries = []
    for f in sorted(journal.glob("*")):
        if f.is_file():
            for line in f.read_text(errors="replace").splitlines():
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return entries


def size(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.glob("*") if f.is_file())
    return path.stat().st_size if path.exists() else 0


class Probe:
    """Per node: CPU seconds, log bytes, journal bytes, read at the edges of a period."""

    def __init__(self, nodes: dict[int, Daemon], journals: dict[int, Path]) -> None:
        self.nodes, self.journals = nodes, journals

    def read(self) -> dict[int, tuple[float, int, int]]:
        return {
            n: (
                cpu_seconds(d.proc.pid),  # type: ignore[union-attr]
                size(d.log_path),
                size(self.journals[n]),
            )
            for n, d in self.nodes.items()
        }


def committing(member: Member, stop: threading.Event, errors: list[str]) -> None:
    offset = 0
    while not stop.wait(0.7):
        offset += 1
        mine = sorted(member.assigned)
        if not mine:
            continue
        try:
            member.commit(dict.fromkeys(mine, offset))
        except Exception as exc:
            errors.append(type(exc).__name__)


def run(outage_s: float, groups: int, node_count: int, keep: str | None) -> dict[str, Any]:
    with postgres_server() as pg, TemporaryDirectory() as tmp:
        url = pg.create_database("outage")
        root = Path(keep or tmp)
        nodes: dict[int, Daemon] = {}
        journals: dict[int, Path] = {}
        for n in range(1, node_count + 1):
            (root / f"node{n}").mkdir()
            journals[n] = root / f"node{n}" / "journal"
            nodes[n] = Daemon(root / f"node{n}", *node_args(url, n, journals[n]))
            nodes[n].start()
        bootstrap = ",".join(d.bootstrap for d in nodes.values())
        members: list[Member] = []
        stop = threading.Event()
        errors: list[str] = []
        threads: list[threading.Thread] = []
        try:
            for g in range(groups):
                for i in range(2):
                    members.append(
                        KafkaPythonMember(
                            bootstrap,
                            f"outage-{g}",
                            "t",
                            client_id=f"m{g}-{i}",
                            session_timeout_ms=10000,
                        )
                    )
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                if all(len(m.assigned) == 2 for m in members):
                    break
                time.sleep(0.2)
            else:
                raise RuntimeError("the groups did not settle")
            for m in members[::2]:
                t = threading.Thread(target=committing, args=(m, stop, errors), daemon=True)
                t.start()
                threads.append(t)
            time.sleep(5)  # past the first commits
            probe = Probe(nodes, journals)
            marks: dict[str, tuple[float, dict[int, tuple[float, int, int]]]] = {}
            marks["quiet"] = (time.time(), probe.read())
            time.sleep(outage_s)
            marks["outage"] = (time.time(), probe.read())
            pg.process.send_signal(2)  # SIGINT: fast shutdown
            pg.process.wait(30)
            stopped = time.time()
            pg.restart(down_s=outage_s)  # (restart stops nothing more: it is stopped)
            marks["recovery"] = (time.time(), probe.read())
            time.sleep(outage_s)
            end = (time.time(), probe.read())
        finally:
            stop.set()
            for m in members:
                m.close()
            for d in nodes.values():
                d.stop()
        entries = [e for j in journals.values() for e in journal_entries(j)]
        periods = ["quiet", "outage", "recovery"]
        edges = [*(marks[p] for p in periods), end]
        report: dict[str, Any] = {
            "outage_s": outage_s,
            "database_down_s": round(marks["recovery"][0] - stopped, 1),
            "groups": groups,
            "nodes": node_count,
            "machine": platform.node(),
            "commit_errors": dict(Counter(errors)),
            "periods": {},
        }
        for name, (t0, at0), (t1, at1) in zip(periods, edges, edges[1:], strict=False):
            rebalances = Counter(
                e["group"]
                for e in entries
                if e.get("type") == "rebalance_started" and t0 * 1000 <= e["ts_ms"] < t1 * 1000
            )
            within = [e for e in entries if t0 * 1000 <= e["ts_ms"] < t1 * 1000]
            triggers = Counter(
                e.get("trigger") for e in within if e.get("type") == "rebalance_started"
            )
            moves = Counter(e["type"] for e in within if e["type"].startswith("partitions_"))
            report["periods"][name] = {
                "seconds": round(t1 - t0, 1),
                "rebalance_triggers": dict(triggers),
                "partition_moves": dict(moves),
                "rebalances_per_group": {
                    f"outage-{g}": rebalances[f"outage-{g}"] for g in range(groups)
                },
                "cpu_s": {n: round(at1[n][0] - at0[n][0], 2) for n in nodes},
                "log_bytes": {n: at1[n][1] - at0[n][1] for n in nodes},
                "journal_bytes": {n: at1[n][2] - at0[n][2] for n in nodes},
            }
        return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--outage-s", type=float, default=20)
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "pg_outage.json"))
    parser.add_argument("--keep", help="keep the nodes' logs and journals in this directory")
    args = parser.parse_args()
    report = run(args.outage_s, args.groups, args.nodes, args.keep)
    text = json.dumps(report, indent=2)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
