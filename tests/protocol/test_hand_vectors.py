"""JoinGroup and SyncGroup at v0 and at their first flexible version, with bytes written out
field by field from Kafka's schemas (not produced by our encoder), in both directions."""

from __future__ import annotations

import pytest

from protocol import codec
from protocol.apis.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from protocol.apis.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from protocol.schema import Struct

from .wirebytes import NO_TAGS, b, cb, cs, i16, i32, s

META = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"  # a v0 subscription to "t"
ASSIGN = b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"

CASES: list[tuple[str, Struct, int, bytes]] = [
    (
        "JoinGroupRequest v0",
        JoinGroupRequest(
            group_id="g1",
            session_timeout_ms=10000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=META)],
        ),
        0,
        s("g1")  # group_id
        + i32(10000)  # session_timeout_ms (no rebalance timeout before v1)
        + s("")  # member_id: unknown
        + s("consumer")  # protocol_type
        + i32(1)  # protocols: one
        + s("range")
        + b(META),
    ),
    (
        "JoinGroupRequest v6 (first flexible)",
        JoinGroupRequest(
            group_id="g1",
            session_timeout_ms=10000,
            rebalance_timeout_ms=300000,
            member_id="m-1",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=META)],
        ),
        6,
        cs("g1")  # group_id, compact
        + i32(10000)  # session_timeout_ms
        + i32(300000)  # rebalance_timeout_ms
        + cs("m-1")  # member_id
        + cs(None)  # group_instance_id: null = varint 0
        + cs("consumer")  # protocol_type
        + b"\x02"  # protocols: compact count 1 + 1
        + cs("range")
        + cb(META)
        + NO_TAGS  # protocol's tagged fields
        + NO_TAGS,  # request's tagged fields
    ),
    (
        "JoinGroupResponse v0",
        JoinGroupResponse(
            error_code=0,
            generation_id=3,
            protocol_name="range",
            leader="m-1",
            member_id="m-1",
            members=[JoinGroupResponseMember(member_id="m-1", metadata=META)],
        ),
        0,
        i16(0)  # error_code (no throttle before v2)
        + i32(3)  # generation_id
        + s("range")  # protocol_name
        + s("m-1")  # leader
        + s("m-1")  # member_id
        + i32(1)  # members: one
        + s("m-1")
        + b(META),
    ),
    (
        "JoinGroupResponse v6 (first flexible)",
        JoinGroupResponse(
            throttle_time_ms=0,
            error_code=79,  # MEMBER_ID_REQUIRED
            generation_id=-1,
            protocol_name="",
            leader="",
            member_id="m-2",
            members=[
                JoinGroupResponseMember(member_id="m-1", group_instance_id="i-1", metadata=META)
            ],
        ),
        6,
        i32(0)  # throttle_time_ms
        + i16(79)  # error_code
        + i32(-1)  # generation_id
        + cs("")  # protocol_name: empty, not null (no protocol_type before v7)
        + cs("")  # leader
        + cs("m-2")  # member_id
        + b"\x02"  # members: compact count 1 + 1
        + cs("m-1")
        + cs("i-1")  # group_instance_id (v5+)
        + cb(META)
        + NO_TAGS  # member's tagged fields
        + NO_TAGS,  # response's tagged fields
    ),
    (
        "SyncGroupRequest v0",
        SyncGroupRequest(
            group_id="g1",
            generation_id=3,
            member_id="m-1",
            assignments=[SyncGroupRequestAssignment(member_id="m-1", assignment=ASSIGN)],
        ),
        0,
        s("g1")  # group_id
        + i32(3)  # generation_id
        + s("m-1")  # member_id
        + i32(1)  # assignments: one
        + s("m-1")
        + b(ASSIGN),
    ),
    (
        "SyncGroupRequest v4 (first flexible)",
        SyncGroupRequest(
            group_id="g1",
            generation_id=3,
            member_id="m-2",
            group_instance_id="i-2",
            assignments=[],
        ),
        4,
        cs("g1")  # group_id
        + i32(3)  # generation_id
        + cs("m-2")  # member_id
        + cs("i-2")  # group_instance_id (v3+); no protocol type/name before v5
        + b"\x01"  # assignments: compact count 0 + 1 (a follower sends none)
        + NO_TAGS,
    ),
    (
        "SyncGroupResponse v0",
        SyncGroupResponse(error_code=27, assignment=b""),  # REBALANCE_IN_PROGRESS
        0,
        i16(27) + b(b""),  # error_code (no throttle before v1), empty assignment
    ),
    (
        "SyncGroupResponse v4 (first flexible)",
        SyncGroupResponse(throttle_time_ms=5, error_code=0, assignment=ASSIGN),
        4,
        i32(5)  # throttle_time_ms
        + i16(0)  # error_code
        + cb(ASSIGN)  # assignment, compact bytes
        + NO_TAGS,
    ),
]


@pytest.mark.parametrize(
    ("message", "version", "wire"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hand_built_vector(message: Struct, version: int, wire: bytes) -> None:
    assert codec.encode(message, version) == wire
    assert codec.decode(type(message), wire, version) == message
