"""ApiVersions negotiation (spec 1.1, 1.4): what a client sees when it asks for too much."""

from __future__ import annotations

import asyncio
import struct

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import DecodeError, ErrorCode
from protocol.frames import decode_response

from ..probe import Probe, Skipped, describe, error_name
from ..registry import scenario

AREA = "ApiVersions / version negotiation"
API_VERSIONS, JOIN_GROUP, METADATA = 18, 11, 3


def _frame(key: int, version: int, correlation: int, rest: bytes) -> bytes:
    body = struct.pack(">hhih", key, version, correlation, -1) + rest
    return struct.pack(">i", len(body)) + body


async def _exchange(probe: Probe, frame: bytes) -> bytes | None:
    """Send one raw frame; the reply's bytes, or None if the broker closed the connection."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(probe.target.host, probe.target.port), 5
    )
    try:
        writer.write(frame)
        header = await probe.within(reader.readexactly(4), probe.target.reply_s, "raw request")
        (size,) = struct.unpack(">i", header)
        return await probe.within(reader.readexactly(size), probe.target.reply_s, "raw request")
    except (asyncio.IncompleteReadError, ConnectionResetError):
        return None
    finally:
        writer.close()


@scenario(AREA, faults=("api_versions_no_fallback",))
async def testApiVersionsAboveMaxAnswersV0UnsupportedVersion(probe: Probe) -> None:
    _, high = probe.versions[API_VERSIONS]
    # A flexible (v3+) request: tagged header, two empty compact strings and no tags.
    frame = _frame(API_VERSIONS, high + 1, 4242, b"\x00\x01\x01\x00")
    reply = await _exchange(probe, frame)
    request = f"ApiVersions v{high + 1} (one above the advertised maximum)"
    if reply is None:
        probe.fail("connection closed", request, "a v0 response with UNSUPPORTED_VERSION", "close")
        return
    try:
        correlation, body = decode_response(BY_KEY[API_VERSIONS], 0, reply)
    except DecodeError as exc:
        probe.fail("the answer is not in the v0 format", request, "ApiVersions v0 body", str(exc))
        return
    assert isinstance(body, ApiVersionsResponse)
    probe.check("correlation id", 4242, correlation, request)
    probe.check(
        "error code",
        error_name(ErrorCode.UNSUPPORTED_VERSION),
        error_name(body.error_code),
        request,
    )
    keys = {k.api_key for k in body.api_keys}
    probe.check("ApiVersions' own range is listed", True, API_VERSIONS in keys, request)


async def _expect_closed(probe: Probe, frame: bytes, request: str) -> None:
    try:
        reply = await _exchange(probe, frame)
    except Exception as exc:
        probe.fail(str(exc), request, "connection closed without a reply", "no close")
        return
    if reply is not None:
        probe.fail("got a reply", request, "connection closed", f"{len(reply)} bytes")


@scenario(AREA, faults=("unsupported_request_kept_open",))
async def testUnsupportedJoinGroupVersionClosesConnection(probe: Probe) -> None:
    _, high = probe.versions.get(JOIN_GROUP, (0, 9))
    frame = _frame(JOIN_GROUP, high + 1, 7, b"\x00" * 16)
    await _expect_closed(probe, frame, f"JoinGroup v{high + 1} (above the advertised maximum)")


@scenario(AREA, faults=("unsupported_request_kept_open",))
async def testUnknownApiKeyClosesConnection(probe: Probe) -> None:
    await _expect_closed(probe, _frame(9999, 0, 8, b""), "api key 9999 v0")


@scenario(AREA, faults=("api_versions_cluster_unchecked",), requires={API_VERSIONS: 5})
async def testApiVersionsV5NamingAnotherClusterOrNodeIsRebootstrapRequired(probe: Probe) -> None:
    """KIP-1242 (Kafka 4.4): ApiVersions v5 carries the cluster id and node id the client
    expects; the broker it reached answers REBOOTSTRAP_REQUIRED when they are not its own
    (the client followed stale metadata), INVALID_REQUEST for one without the other."""
    conn = await probe.connect()
    version = probe.version(METADATA, at_least=2)  # v2+: the cluster id
    meta = await probe.within(conn.send(MetadataRequest(topics=[]), version), 5, "Metadata")
    assert isinstance(meta, MetadataResponse)
    here = (probe.target.host, probe.target.port)
    ids = [b.node_id for b in meta.brokers if (b.host, b.port) == here]
    if meta.cluster_id is None or len(ids) != 1:
        raise Skipped("the target's own node id is not in its Metadata under its address")
    [node_id] = ids
    cases = [
        (meta.cluster_id, node_id, ErrorCode.NONE),
        (meta.cluster_id, node_id + 1, ErrorCode.REBOOTSTRAP_REQUIRED),
        ("not-" + meta.cluster_id, node_id, ErrorCode.REBOOTSTRAP_REQUIRED),
        (meta.cluster_id, -1, ErrorCode.INVALID_REQUEST),
    ]
    for cluster_id, node, expected in cases:
        request = ApiVersionsRequest(
            client_software_name="conformance",
            client_software_version="1",
            cluster_id=cluster_id,
            node_id=node,
        )
        answer = await probe.within(conn.send(request, 5), 5, "ApiVersions v5")
        assert isinstance(answer, ApiVersionsResponse)
        what = f"cluster {cluster_id!r}, node {node}"
        probe.check_error(what, expected, answer.error_code, request, 5)
        if expected == ErrorCode.NONE:
            probe.check("its keys", True, bool(answer.api_keys), describe(request, 5))
