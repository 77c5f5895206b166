"""The ceiling: a uvloop server that frames Kafka requests and answers each with a canned
response, with no logic at all. Nothing a Python server does per request can cost less, so
its rate is the most any Python Kafka server can reach on the machine.

    python -m bench.ceiling --port PORT

Responses are encoded once at start for every version of the few APIs the load generator
sends (ApiVersions, JoinGroup, SyncGroup, Heartbeat, LeaveGroup); per request only the
correlation id is patched in. Any other API closes the connection.
"""

from __future__ import annotations

import argparse
import asyncio
import struct

import uvloop

from protocol.apis import BY_KEY
from protocol.apis.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.apis.heartbeat import HeartbeatResponse
from protocol.apis.join_group import JoinGroupResponse, JoinGroupResponseMember
from protocol.apis.leave_group import LeaveGroupResponse
from protocol.apis.sync_group import SyncGroupResponse
from protocol.frames import FrameSplitter, encode_response
from protocol.schema import Struct

_HEADER = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
SERVED = (18, 11, 14, 12, 13)  # ApiVersions, JoinGroup, SyncGroup, Heartbeat, LeaveGroup


def _body(key: int) -> Struct:
    if key == 18:
        return ApiVersionsResponse(
            api_keys=[
                ApiVersionsResponseApiVersion(
                    api_key=k, min_version=BY_KEY[k].min_version, max_version=BY_KEY[k].max_version
                )
                for k in SERVED
            ]
        )
    if key == 11:
        return JoinGroupResponse(
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader="m",
            member_id="m",
            members=[JoinGroupResponseMember(member_id="m", metadata=b"")],
        )
    if key == 14:
        return SyncGroupResponse(protocol_type="consumer", protocol_name="range", assignment=b"")
    if key == 12:
        return HeartbeatResponse()
    return LeaveGroupResponse()


def canned_responses() -> dict[tuple[int, int], bytes]:
    """Every (api key, version) served, mapped to its response frame (correlation id 0)."""
    out: dict[tuple[int, int], bytes] = {}
    for key in SERVED:
        api = BY_KEY[key]
        body = _body(key)
        for version in range(api.min_version, api.max_version + 1):
            out[(key, version)] = encode_response(api, version, 0, body)
    return out


class CannedProtocol(asyncio.Protocol):
    def __init__(self, canned: dict[tuple[int, int], bytes]) -> None:
        self.canned = canned
        self.splitter = FrameSplitter()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        out = bytearray()
        for frame in self.splitter.feed(data):
            key, version, correlation_id = _HEADER.unpack_from(frame)
            template = self.canned.get((key, version))
            if template is None:
                self.transport.close()
                return
            start = len(out)
            out += template
            _CORRELATION.pack_into(out, start + 4, correlation_id)
        if out:
            self.transport.write(out)


async def serve(port: int) -> None:
    canned = canned_responses()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: CannedProtocol(canned), "127.0.0.1", port, backlog=4096
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvloop.run(serve(args.port))


if __name__ == "__main__":
    main()
