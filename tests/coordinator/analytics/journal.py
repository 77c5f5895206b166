"""Hand-built journals for the analytics tests: entries as the daemon writes them (with a
sequence number per node), a rebalance as the state machine goes through it."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Journal:
    def __init__(self) -> None:
        self.entries: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.seq: Counter[int] = Counter()
        self.state: dict[str, str] = defaultdict(lambda: "Empty")
        self.generation: Counter[str] = Counter()
        self.members: dict[str, list[str]] = defaultdict(list)

    def add(self, node: int, ts: int, type_: str, group: str, **body: Any) -> None:
        entry = {"v": 1, "ts_ms": ts, "node": node, "seq": self.seq[node], "type": type_,
                 "group": group, **body}  # fmt: skip
        self.seq[node] += 1
        self.entries[node].append(entry)
        if type_ == "state_changed":
            self.state[group] = body["to"]

    def to(self, node: int, ts: int, group: str, state: str) -> None:
        self.add(node, ts, "state_changed", group, **{"from": self.state[group], "to": state})

    def rebalance(self, node: int, ts: int, group: str, trigger: str, reason: str,
                  join_ms: int, sync_ms: int) -> None:  # fmt: skip
        """A whole rebalance: PreparingRebalance at ``ts``, CompletingRebalance after
        ``join_ms``, Stable ``sync_ms`` later (or Empty when nobody is left)."""
        members = self.members[group]
        self.to(node, ts, group, "PreparingRebalance")
        self.add(node, ts, "rebalance_started", group, generation=self.generation[group],
                 trigger=trigger, reason=reason)  # fmt: skip
        self.generation[group] += 1
        gen, t = self.generation[group], ts + join_ms
        if not members:
            self.to(node, t, group, "Empty")
            self.add(node, t, "join_completed", group, generation=gen, members=0, leader=None,
                     protocol=None, duration_ms=join_ms)  # fmt: skip
            return
        self.to(node, t, group, "CompletingRebalance")
        self.add(node, t, "join_completed", group, generation=gen, members=len(members),
                 leader=members[0], protocol="range", duration_ms=join_ms)  # fmt: skip
        self.to(node, t + sync_ms, group, "Stable")
        self.add(node, t + sync_ms, "sync_completed", group, generation=gen, duration_ms=sync_ms,
                 rebalance_duration_ms=join_ms + sync_ms,
                 assignment={m: {"bytes": 24, "partitions": 6 // len(members)}
                             for m in members})  # fmt: skip

    def join(self, node: int, ts: int, group: str, member: str, client: str, host: str,
             instance: str | None = None, join_ms: int = 100,
             sync_ms: int = 10) -> None:  # fmt: skip
        self.add(node, ts, "member_joined", group, member=member, instance=instance,
                 client_id=client, client_host=host, protocols=["range"])  # fmt: skip
        self.members[group].append(member)
        self.rebalance(node, ts, group, "new_member", f"adding new member {member}", join_ms,
                       sync_ms)  # fmt: skip

    def remove(self, node: int, ts: int, group: str, member: str, how: str,
               join_ms: int = 50, sync_ms: int = 5, **why: Any) -> None:  # fmt: skip
        """``how``: left, expired or evicted; then the rebalance it causes."""
        self.add(node, ts, f"member_{how}", group, member=member, instance=None, **why)
        self.members[group].remove(member)
        trigger, reason = {
            "left": ("member_left", f"LeaveGroup for ({member})"),
            "expired": ("member_expired", f"member {member} expired (session timeout)"),
            "evicted": ("loaded", "loaded over group.max.size"),
        }[how]
        self.rebalance(node, ts, group, trigger, reason, join_ms, sync_ms)

    def write(self, directory: Path, node: int, *, legacy: bool = False,
              reverse_at: int | None = None) -> Path:  # fmt: skip
        """``legacy``: without ``seq``, as journals were before it. ``reverse_at``: the
        entries of that millisecond in the file in reverse order (only seq tells)."""
        entries = list(self.entries[node])
        if reverse_at is not None:
            tied = [i for i, e in enumerate(entries) if e["ts_ms"] == reverse_at]
            for i, e in zip(tied, reversed([entries[i] for i in tied]), strict=True):
                entries[i] = e
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"journal-node{node}.jsonl"
        with path.open("w") as f:
            for e in entries:
                if legacy:
                    e = {k: v for k, v in e.items() if k != "seq"}
                f.write(json.dumps(e) + "\n")
        return path


async def kip848_journal(directory: Path) -> tuple[str, str]:
    """The journal of a daemon where two real KIP-848 members (the project's client) share
    topic ``t`` of group ``kip848`` and leave; returns their member ids."""
    from coordinator.client.consumer_member import ConsumerGroupMember
    from coordinator.group.config import GroupConfig
    from coordinator.settings.config import Settings
    from coordinator.shell.server import Server
    from coordinator.telemetry.settings import ObservabilitySettings

    srv = Server(
        Settings(
            listen=("127.0.0.1", 0),
            store="memory",
            topics=(("t", 4),),
            group=GroupConfig(initial_rebalance_delay_ms=0),
            observability=ObservabilitySettings(journal_dir=directory),
        )
    )
    await srv.start()
    try:
        bootstrap = f"127.0.0.1:{srv.port}"
        a = ConsumerGroupMember(bootstrap, "kip848", ["t"])
        await a.start()
        b = ConsumerGroupMember(bootstrap, "kip848", ["t"])
        await b.start()
        deadline = time.monotonic() + 60
        while not (len(a.assignment.get("t", [])) == len(b.assignment.get("t", [])) == 2):
            assert time.monotonic() < deadline, (a.assignment, b.assignment)
            await asyncio.sleep(0.05)
        await a.close()
        await b.close()
    finally:
        await srv.stop()  # flushes the journal
    return a.member_id, b.member_id
