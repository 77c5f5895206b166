"""The journal: one JSON line per group event, rotated by size and by time, nothing lost."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from coordinator.group import events
from coordinator.group.events import RebalanceTrigger, RemovalCause
from coordinator.journal import SCHEMA_VERSION, JournalWriter, to_entry
from coordinator.shared.clock import ManualClock
from protocol.consumer import ConsumerProtocolAssignment, TopicPartition, encode_assignment


def lines(directory: Path) -> list[dict[str, object]]:
    out = []
    for path in sorted(directory.iterdir()):
        out += [json.loads(line) for line in path.read_text().splitlines()]
    return out


def test_every_entry_has_schema_version_time_and_node() -> None:
    e = to_entry(events.OffsetsCommitted("g", 3), 1_700_000_000.123, node_id=7)
    assert e == {
        "v": SCHEMA_VERSION,
        "ts": "2023-11-14T22:13:20.123Z",
        "ts_ms": 1_700_000_000_123,
        "node": 7,
        "type": "offsets_committed",
        "group": "g",
        "count": 3,
    }


def test_removals_split_into_left_expired_and_evicted() -> None:
    left = to_entry(events.MemberRemoved("g", "m", None, "x", RemovalCause.LEFT, "bye"), 0, 0)
    expired = to_entry(events.MemberRemoved("g", "m", "i", "x", RemovalCause.SYNC_TIMEOUT), 0, 0)
    evicted = to_entry(events.MemberRemoved("g", "m", None, "x", RemovalCause.GROUP_MAX_SIZE), 0, 0)
    assert left is not None and expired is not None and evicted is not None
    assert (left["type"], left["reason"]) == ("member_left", "bye")
    assert (expired["type"], expired["timer"], expired["instance"]) == (
        "member_expired",
        "sync_timeout",
        "i",
    )
    assert (evicted["type"], evicted["reason"]) == ("member_evicted", "group_max_size")


def test_sync_entry_counts_partitions_of_consumer_assignments() -> None:
    two = encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=[
                TopicPartition(topic="a", partitions=[0]),
                TopicPartition(topic="b", partitions=[3]),
            ]
        )
    )
    e = events.SyncCompleted("g", 4, 5, 30, "consumer", (("m1", two), ("m2", b""), ("m3", b"x")))
    entry = to_entry(e, 0, 0)
    assert entry is not None
    assert entry["assignment"] == {
        "m1": {"bytes": len(two), "partitions": 2},
        "m2": {"bytes": 0, "partitions": 0},
        "m3": {"bytes": 1, "partitions": None},  # undecodable: only its size
    }
    other = to_entry(events.SyncCompleted("g", 4, 5, 30, "connect", (("m1", two),)), 0, 0)
    assert other is not None and other["assignment"]["m1"]["partitions"] is None


def test_writer_writes_journaled_events_only_and_flushes_on_close(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, node_id=2)
    writer(events.RebalanceStarted("g", 1, "because", RebalanceTrigger.MEMBER_LEFT))
    writer("not an event")
    writer(events.StateChanged("g", "Stable", "PreparingRebalance"))
    writer.close()
    writer(events.OffsetsCommitted("g", 1))  # after close: dropped, no error
    got = lines(tmp_path)
    assert [(e["type"], e["node"]) for e in got] == [
        ("rebalance_started", 2),
        ("state_changed", 2),
    ]
    assert got[0]["trigger"] == "member_left"


def test_writer_numbers_entries_in_order_across_rotations(tmp_path: Path) -> None:
    # One millisecond for all: only seq says in which order they happened.
    clock = ManualClock(1_700_000_000_000)
    writer = JournalWriter(tmp_path, node_id=1, max_bytes=500, interval_s=3600, clock=clock)
    for i in range(30):
        writer(events.OffsetsCommitted("g", i))
    writer.close()
    assert len(list(tmp_path.iterdir())) > 2
    got = sorted(lines(tmp_path), key=lambda e: (e["ts_ms"], e["node"], e["seq"]))
    assert [e["count"] for e in got] == list(range(30))
    assert [e["seq"] for e in got] == list(range(30))


def test_writer_rotates_by_size_without_losing_or_overwriting_lines(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, node_id=0, max_bytes=2000, interval_s=3600)
    for i in range(300):
        writer(events.OffsetsCommitted(f"group-{i}", i))
    writer.close()
    files = list(tmp_path.iterdir())
    assert len(files) > 5  # ~100 bytes a line: many rotations within one interval
    assert all(f.stat().st_size < 2000 + 200 for f in files)
    assert sorted(e["count"] for e in lines(tmp_path)) == list(range(300))


def test_writer_rotates_by_time(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    writer = JournalWriter(tmp_path, node_id=0, max_bytes=1 << 20, interval_s=60, clock=clock)
    writer(events.OffsetsCommitted("g", 1))
    clock.advance(30_000)
    writer(events.OffsetsCommitted("g", 2))  # same interval, same file
    clock.advance(40_000)
    writer(events.OffsetsCommitted("g", 3))
    writer.close()
    assert len(list(tmp_path.iterdir())) == 2
    entries = lines(tmp_path)
    assert sorted(e["count"] for e in entries) == [1, 2, 3]
    # Entries carry the daemon's clock, not the writer thread's reading of the wall clock.
    assert sorted(e["ts_ms"] for e in entries) == [
        1_700_000_000_000,
        1_700_000_030_000,
        1_700_000_070_000,
    ]


def test_membership_entries_name_the_client_and_the_instance() -> None:
    joined = to_entry(
        events.MemberJoined("g", "m-1", "i-1", "app", "/10.0.0.1", ["cooperative-sticky", "range"]),
        0,
        0,
    )
    replaced = to_entry(events.StaticMemberReplaced("g", "i-1", "m-1", "m-2"), 0, 0)
    deleted = to_entry(events.GroupDeleted("g", "DeleteGroups"), 0, 0)
    assert joined is not None and replaced is not None and deleted is not None
    assert {k: joined[k] for k in ("type", "member", "instance", "client_id", "client_host")} == {
        "type": "member_joined",
        "member": "m-1",
        "instance": "i-1",
        "client_id": "app",
        "client_host": "/10.0.0.1",
    }
    assert joined["protocols"] == ["cooperative-sticky", "range"]
    assert (replaced["type"], replaced["old_member"], replaced["member"]) == (
        "static_member_replaced",
        "m-1",
        "m-2",
    )
    assert (deleted["type"], deleted["reason"]) == ("group_deleted", "DeleteGroups")


def test_a_slow_disk_does_not_slow_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coordinator.journal import writer as writer_module

    real_emit = writer_module.SizeAndTimeRotatingFileHandler.emit

    def slow_emit(self: object, record: object) -> None:
        time.sleep(0.1)  # a disk that takes 100 ms per line
        real_emit(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module.SizeAndTimeRotatingFileHandler, "emit", slow_emit)
    writer = JournalWriter(tmp_path, node_id=0)
    started = time.perf_counter()
    for i in range(5):
        writer(events.OffsetsCommitted("g", i))
    assert time.perf_counter() - started < 0.1  # queued, not written
    writer.close()  # waits for the writer thread
    assert [e["count"] for e in lines(tmp_path)] == [0, 1, 2, 3, 4]


def test_journal_directory_and_files_are_private_including_rotated_ones(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "journal"
    old = os.umask(0o022)
    try:
        writer = JournalWriter(directory, node_id=0, max_bytes=2000, interval_s=3600)
        for i in range(100):
            writer(events.OffsetsCommitted(f"group-{i}", i))
        writer.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = list(directory.iterdir())
    assert len(files) > 1  # rotated at least once
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


async def test_a_kip848_groups_target_assignments_and_reconciliations_are_journaled(
    tmp_path: Path,
) -> None:
    """Two real KIP-848 members join a daemon that writes a journal: its lines hold the
    group's target assignments and each member's reconciliation, as docs/journal.md says."""
    from tests.coordinator.analytics.journal import kip848_journal

    a, b = await kip848_journal(tmp_path)
    got = [e for e in lines(tmp_path) if e.get("group") == "kip848"]
    targets = [e for e in got if e["type"] == "target_assignment_computed"]
    assert [t["members"] for t in targets][:2] == [1, 2]
    assert targets[0]["protocol"] == "uniform" and targets[1]["generation"] == 2
    reconciled = {(e["member"], e["generation"]) for e in got if e["type"] == "member_reconciled"}
    assert {(a, 1), (b, 2), (a, 2)} <= reconciled
    assert {"member_joined", "state_changed"} <= {e["type"] for e in got}
