"""The rebalance generator's template frames are byte for byte what the codecs encode, and
its partial reads of responses agree with the codecs' decoding, in every version."""

from __future__ import annotations

import pytest

from bench import groups
from coordinator.client.pool import ApiVersionTable
from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.apis.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.frames import encode_request, encode_response

MEMBER = "consumer-1-6f1c2c1e-0d7e-4a8e-9a43-1b2c3d4e5f60"


def frames_at(join: int, sync: int, heartbeat: int) -> groups._Frames:
    table = ApiVersionTable({11: (0, join), 14: (0, sync), 12: (0, heartbeat)})
    return groups._Frames("rb-join-5000-18f3a", table, 6000, 60000)


@pytest.mark.parametrize("version", range(BY_KEY[11].max_version + 1))
def test_join_frames(version: int) -> None:
    frames = frames_at(version, 0, 0)
    for member_id, correlation_id in (("", 1), (MEMBER, 2), ("é" * 200, 70000)):
        expected = encode_request(
            JoinGroupRequest(
                group_id="rb-join-5000-18f3a",
                session_timeout_ms=6000,
                rebalance_timeout_ms=60000,
                member_id=member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=groups.SUBSCRIPTION)],
            ),
            version,
            correlation_id,
            "bench",
        )
        middle = groups._string(member_id, frames.join.flexible)
        assert frames.join.frame(correlation_id, middle) == expected

    for error, leader in ((79, ""), (0, "leader-1"), (0, MEMBER)):
        body = JoinGroupResponse(
            error_code=error,
            generation_id=7,
            protocol_type="consumer",
            protocol_name="range",
            leader=leader,
            member_id=MEMBER,
            members=[],
        )
        frame = encode_response(BY_KEY[11], version, 3, body)[4:]
        assert frames.read_join(frame) == (error, 7, "range", leader, MEMBER)


@pytest.mark.parametrize("version", range(BY_KEY[14].max_version + 1))
def test_sync_frames(version: int) -> None:
    frames = frames_at(0, version, 0)
    for name in ("range", None):
        expected = encode_request(
            SyncGroupRequest(
                group_id="rb-join-5000-18f3a",
                generation_id=12,
                member_id=MEMBER,
                protocol_type="consumer",
                protocol_name=name,
                assignments=[],
            ),
            version,
            9,
            "bench",
        )
        middle = groups._INT32.pack(12) + groups._string(MEMBER, frames.sync_flexible)
        assert frames.sync(name).frame(9, middle) == expected
    for error in (0, 27):
        body = SyncGroupResponse(error_code=error, protocol_name="range", assignment=b"x")
        frame = encode_response(BY_KEY[14], version, 9, body)[4:]
        assert frames.read_sync_error(frame) == error


@pytest.mark.parametrize("version", range(BY_KEY[12].max_version + 1))
def test_heartbeat_frames(version: int) -> None:
    frames = frames_at(0, 0, version)
    expected = encode_request(
        HeartbeatRequest(group_id="rb-join-5000-18f3a", generation_id=3, member_id=MEMBER),
        version,
        5,
        "bench",
    )
    middle = groups._INT32.pack(3) + groups._string(MEMBER, frames.heartbeat.flexible)
    assert frames.heartbeat.frame(5, middle) == expected
    for error in (0, 22, 25, 27):
        frame = encode_response(BY_KEY[12], version, 5, HeartbeatResponse(error_code=error))[4:]
        assert frames.read_heartbeat_error(frame) == error
