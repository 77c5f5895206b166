"""Golden vectors: exact bytes for every API at its lowest, first flexible and highest version."""

from __future__ import annotations

import pytest

from protocol import codec
from protocol.apis import BY_NAME
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.frames import decode_request, decode_response, encode_request, encode_response

from .golden_vectors import VECTORS
from .samples import sample


@pytest.mark.parametrize(
    ("api_name", "kind", "version", "hex_bytes", "checked"),
    VECTORS,
    ids=[f"{v[0]}-{v[1]}-v{v[2]}" for v in VECTORS],
)
def test_golden_vector(
    api_name: str, kind: str, version: int, hex_bytes: str, checked: str
) -> None:
    api = BY_NAME[api_name]
    cls = api.request if kind == "request" else api.response
    wire = bytes.fromhex(hex_bytes)
    expected = sample(cls, version)
    assert codec.encode(expected, version) == wire
    assert codec.decode(cls, wire, version) == expected


def test_every_api_has_golden_vectors_at_lowest_flexible_and_highest() -> None:
    have = {(name, kind, v) for name, kind, v, _, _ in VECTORS}
    for api in BY_NAME.values():
        wanted = {api.min_version, api.max_version}
        flexible = api.request.kafka.flexible if api.request.kafka else None
        if flexible and api.supports(flexible[0]):
            wanted.add(flexible[0])
        for kind in ("request", "response"):
            assert {(api.name, kind, v) for v in wanted} <= have


def s(text: str) -> str:
    """int16-length string, hex."""
    return f"{len(text):04x}" + text.encode().hex()


# Hand-assembled vectors for the versions kio does not know (Kafka 4 dropped them).
HAND = {
    ("Fetch", "request", 0): (
        "00000001"  # replica_id
        + "00000002"  # max_wait_ms
        + "00000003"  # min_bytes (no max_bytes before v3, no isolation level before v4)
        + "00000002"
        + s("s6")
        + "00000002"
        + "00000009"  # partition
        + "000000000000000a"  # fetch_offset
        + "0000000b"  # partition_max_bytes
        + "0000000d"
        + "000000000000000e"
        + "0000000f"
        + s("s17")
        + "00000002"
        + "00000014"
        + "0000000000000015"
        + "00000016"
        + "00000018"
        + "0000000000000019"
        + "0000001a"
    ),
    ("Fetch", "response", 0): (
        "00000002"  # no throttle_time_ms before v1
        + s("s3")
        + "00000002"
        + "00000006"  # partition
        + "0007"  # error_code
        + "0000000000000008"  # high_watermark
        + "0000000209ab"  # records, int32 length
        + "0000000b"
        + "000c"
        + "000000000000000d"
        + "000000020eab"
        + s("s16")
        + "00000002"
        + "00000013"
        + "0014"
        + "0000000000000015"
        + "0000000216ab"
        + "00000018"
        + "0019"
        + "000000000000001a"
        + "000000021bab"
    ),
    ("OffsetCommit", "request", 0): (
        s("s1")
        + "00000002"  # group_id, 2 topics
        + s("s4")
        + "00000002"
        + "00000007"
        + "0000000000000008"
        + s("s9")
        + "0000000b"
        + "000000000000000c"
        + s("s13")
        + s("s15")
        + "00000002"
        + "00000012"
        + "0000000000000013"
        + s("s20")
        + "00000016"
        + "0000000000000017"
        + s("s24")
    ),
    ("OffsetCommit", "response", 0): (
        "00000002"
        + s("s3")
        + "00000002"
        + "00000006"
        + "0007"
        + "00000009"
        + "000a"
        + s("s12")
        + "00000002"
        + "0000000f"
        + "0010"
        + "00000012"
        + "0013"
    ),
    ("OffsetFetch", "request", 0): (
        s("s1")
        + "00000002"
        + s("s4")
        + "00000002"
        + "00000006"
        + "00000007"
        + s("s9")
        + "00000002"
        + "0000000b"
        + "0000000c"
    ),
    ("OffsetFetch", "response", 0): (
        "00000002"
        + s("s3")
        + "00000002"
        + "00000006"
        + "0000000000000007"
        + s("s8")
        + "0009"
        + "0000000b"
        + "000000000000000c"
        + s("s13")
        + "000e"
        + s("s16")
        + "00000002"
        + "00000013"
        + "0000000000000014"
        + s("s21")
        + "0016"
        + "00000018"
        + "0000000000000019"
        + s("s26")
        + "001b"
    ),
}


def cs(text: str) -> str:
    """Compact string (flexible versions), hex."""
    return f"{len(text) + 1:02x}" + text.encode().hex()


# Kafka 4.4's DeleteGroups v3 (kio 0.6.5 stops at v2): the request as v2, the response with
# a nullable ErrorMessage after each group's ErrorCode.
HAND |= {
    ("DeleteGroups", "request", 3): "03" + cs("s2") + cs("s3") + "00",
    ("DeleteGroups", "response", 3): (
        "00000001"  # throttle_time_ms
        + "03"  # two results
        + cs("s4")
        + "0005"
        + cs("s6")  # error_message (v3)
        + "00"
        + cs("s8")
        + "0009"
        + cs("s10")
        + "00"
        + "00"
    ),
}


# Kafka 4.4's ApiVersions v5 (KIP-1242; kio 0.6.5 stops at v4): v4's request, then the
# cluster id (compact nullable string) and node id (int32), not tagged; the response is v4's.
HAND |= {
    ("ApiVersions", "request", 5): (
        cs("s1")  # client_software_name
        + cs("s2")  # client_software_version
        + cs("s3")  # cluster_id (v5)
        + "00000004"  # node_id (v5)
        + "00"  # tagged fields
    ),
    ("ApiVersions", "response", 5): (
        "0001"  # error_code
        + "03"  # two api keys
        + "0004"
        + "0005"
        + "0006"
        + "00"  # api_key, min, max, tagged fields
        + "0008"
        + "0009"
        + "000a"
        + "00"
        + "0000000b"  # throttle_time_ms
        + "04"  # four tagged fields
        + "0013"  # tag 0 (supported features), 19 bytes
        + "03"
        + cs("s14")
        + "000f"
        + "0010"
        + "00"
        + cs("s18")
        + "0013"
        + "0014"
        + "00"
        + "0108"
        + "0000000000000015"  # tag 1: finalized features epoch
        + "0213"  # tag 2 (finalized features), 19 bytes
        + "03"
        + cs("s24")
        + "0019"
        + "001a"
        + "00"
        + cs("s28")
        + "001d"
        + "001e"
        + "00"
        + "030101"  # tag 3: zk migration ready
    ),
}


def test_api_versions_v5_request_null_cluster_id_and_no_node() -> None:
    """The fields' defaults on the wire: a null compact string is 00, the node id -1."""
    from protocol.apis.api_versions import ApiVersionsRequest

    body = ApiVersionsRequest(client_software_name="a", client_software_version="1")
    wire = bytes.fromhex(cs("a") + cs("1") + "00" + "ffffffff" + "00")
    assert codec.encode(body, 5) == wire
    assert codec.decode(ApiVersionsRequest, wire, 5) == body
    assert codec.encode(body, 4) == bytes.fromhex(cs("a") + cs("1") + "00")


@pytest.mark.parametrize("key", sorted(HAND), ids=lambda k: f"{k[0]}-{k[1]}-v{k[2]}")
def test_hand_assembled_vectors(key: tuple[str, str, int]) -> None:
    match = [v for v in VECTORS if v[:3] == key]
    assert match and match[0][4] == "hand"
    assert match[0][3] == HAND[key]


def test_spec_worked_example_heartbeat_v4() -> None:
    frame = encode_request(
        HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4, 7, "c1"
    )
    expected = "00000017 000c 0004 00000007 0002 6331 00 02 67 00000001 02 6d 00 00"
    assert frame.hex() == expected.replace(" ", "")
    request = decode_request(frame[4:])
    assert request.header.client_id == "c1" and request.body == HeartbeatRequest(
        group_id="g", generation_id=1, member_id="m"
    )
    response = encode_response(BY_NAME["Heartbeat"], 4, 7, HeartbeatResponse())
    assert response.hex() == "0000000c 00000007 00 00000000 0000 00".replace(" ", "")
    assert decode_response(BY_NAME["Heartbeat"], 4, response[4:]) == (7, HeartbeatResponse())


def test_api_versions_response_always_uses_header_v0() -> None:
    from protocol.apis.api_versions import ApiVersionsResponse

    frame = encode_response(BY_NAME["ApiVersions"], 3, 9, ApiVersionsResponse())
    # size, correlation id, then straight into the body: error 0, empty compact array,
    # throttle 0, empty tag section -- no header tag byte.
    assert frame.hex() == "0000000c" + "00000009" + "0000" + "01" + "00000000" + "00"


def test_non_default_value_in_a_missing_non_ignorable_field_is_an_encode_error() -> None:
    from protocol.apis.find_coordinator import FindCoordinatorRequest
    from protocol.errors import EncodeError

    with pytest.raises(EncodeError):
        codec.encode(FindCoordinatorRequest(key="g", key_type=1), 0)
    # An ignorable field is silently dropped instead.
    from protocol.apis.join_group import JoinGroupRequest

    assert codec.encode(JoinGroupRequest(group_id="g", rebalance_timeout_ms=5), 0) == codec.encode(
        JoinGroupRequest(group_id="g"), 0
    )


def test_unknown_tagged_fields_are_kept_and_reencoded() -> None:
    wire = bytes.fromhex("02670000000102 6d00 02 05 02 aabb 07 00".replace(" ", ""))
    msg = codec.decode(HeartbeatRequest, wire, 4)
    assert msg.unknown_tagged_fields == {5: b"\xaa\xbb", 7: b""}
    assert codec.encode(msg, 4) == wire


def test_out_of_order_tags_are_refused() -> None:
    from protocol.errors import DecodeError

    wire = bytes.fromhex("02670000000102 6d00 02 07 00 05 00".replace(" ", ""))
    with pytest.raises(DecodeError):
        codec.decode(HeartbeatRequest, wire, 4)
