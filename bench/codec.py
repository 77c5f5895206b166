"""Codec micro-benchmarks: our compiled codecs against kio, measured in the same run.

    python -m bench.codec [--quick]

For each case: microseconds per decode and per encode (median of several timed repeats),
for us and for kio, and the ratio kio/ours of decode+encode (above 1 = we are faster).
Writes ``bench/results/codec.json`` and ``bench/results/codec.md``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.serial import entity_reader, entity_writer

from protocol import codec
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.join_group import JoinGroupResponse, JoinGroupResponseMember
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from protocol.schema import Struct

RESULTS = Path(__file__).parent / "results"
MEMBER = "consumer-1-5d0c6a0e-8d2f-4b3a-9a57-6c1f4e2d0b11"


@dataclass
class Case:
    name: str
    kio_module: str
    kio_class: str
    version: int
    message: Struct


def _members(n: int) -> list[str]:
    return [f"consumer-{i}-5d0c6a0e-8d2f-4b3a-9a57-6c1f4e2d0b{i:02d}" for i in range(n)]


def cases() -> list[Case]:
    subscription = encode_subscription(
        ConsumerProtocolSubscription(topics=["orders", "payments"], generation_id=3)
    )
    assignment = encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=[TopicPartition(topic="orders", partitions=[0, 1, 2])]
        )
    )
    heartbeat = HeartbeatRequest(group_id="orders-service", generation_id=7, member_id=MEMBER)
    join = JoinGroupResponse(
        generation_id=7,
        protocol_type="consumer",
        protocol_name="range",
        leader=MEMBER,
        member_id=MEMBER,
        members=[JoinGroupResponseMember(member_id=m, metadata=subscription) for m in _members(10)],
    )
    sync = SyncGroupRequest(
        group_id="orders-service",
        generation_id=7,
        member_id=MEMBER,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=assignment) for m in _members(10)
        ],
    )
    commit = OffsetCommitRequest(
        group_id="orders-service",
        generation_id_or_member_epoch=7,
        member_id=MEMBER,
        topics=[
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=1000 + p)
                    for p in range(50)
                ],
            )
        ],
    )
    return [
        Case("Heartbeat v3 request", "heartbeat", "HeartbeatRequest", 3, heartbeat),
        Case("Heartbeat v4 request", "heartbeat", "HeartbeatRequest", 4, heartbeat),
        Case("JoinGroup v5 response (10 members)", "join_group", "JoinGroupResponse", 5, join),
        Case("JoinGroup v9 response (10 members)", "join_group", "JoinGroupResponse", 9, join),
        Case("SyncGroup v3 request (10 members)", "sync_group", "SyncGroupRequest", 3, _v3(sync)),
        Case("SyncGroup v5 request (10 members)", "sync_group", "SyncGroupRequest", 5, sync),
        Case(
            "OffsetCommit v8 request (50 partitions)",
            "offset_commit",
            "OffsetCommitRequest",
            8,
            commit,
        ),
    ]


def _v3(sync: SyncGroupRequest) -> SyncGroupRequest:
    # v3 has no protocol type/name; they must be left at their defaults.
    return SyncGroupRequest(
        group_id=sync.group_id,
        generation_id=sync.generation_id,
        member_id=sync.member_id,
        assignments=sync.assignments,
    )


def _time_per_call(fn: Callable[[], Any], number: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def measure(case: Case, number: int, repeats: int) -> dict[str, Any]:
    cls = type(case.message)
    wire = codec.encode(case.message, case.version)
    kind = "request" if case.kio_class.endswith("Request") else "response"
    module = importlib.import_module(f"kio.schema.{case.kio_module}.v{case.version}.{kind}")
    kio_cls = getattr(module, case.kio_class)
    read_kio = entity_reader(kio_cls)
    write_kio = entity_writer(kio_cls)
    kio_obj, _ = read_kio(wire, 0)

    def kio_encode() -> bytes:
        out = io.BytesIO()
        write_kio(out, kio_obj)
        return out.getvalue()

    assert kio_encode() == wire, case.name  # same bytes, or the comparison is moot
    decoded = codec.decode(cls, wire, case.version)
    ours_dec = _time_per_call(lambda: codec.decode(cls, wire, case.version), number, repeats)
    ours_enc = _time_per_call(lambda: codec.encode(decoded, case.version), number, repeats)
    kio_dec = _time_per_call(lambda: read_kio(wire, 0), number, repeats)
    kio_enc = _time_per_call(kio_encode, number, repeats)
    return {
        "case": case.name,
        "bytes": len(wire),
        "ours_decode_us": round(ours_dec, 3),
        "ours_encode_us": round(ours_enc, 3),
        "kio_decode_us": round(kio_dec, 3),
        "kio_encode_us": round(kio_enc, 3),
        "ratio_kio_over_ours": round((kio_dec + kio_enc) / (ours_dec + ours_enc), 2),
    }


def run(number: int, repeats: int) -> list[dict[str, Any]]:
    return [measure(case, number, repeats) for case in cases()]


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | bytes | ours decode µs | ours encode µs | kio decode µs | kio encode µs |"
        " kio/ours (dec+enc) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['bytes']} | {r['ours_decode_us']} | {r['ours_encode_us']} |"
            f" {r['kio_decode_us']} | {r['kio_encode_us']} | {r['ratio_kio_over_ours']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny run that only proves it works")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    number, repeats = (50, 1) if args.quick else (5000, 7)
    rows = run(number, repeats)
    table = markdown(rows)
    print(table)
    if not args.quick:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "number": number,
            "repeats": repeats,
            "statistic": "median",
        }
        (args.out / "codec.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
        (args.out / "codec.md").write_text(table)


if __name__ == "__main__":
    main()
