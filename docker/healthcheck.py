"""The container's healthcheck: the daemon answers on the first listener it is configured
with. A PLAINTEXT listener must answer a Kafka ApiVersions request; a TLS or SASL one (which
would need credentials) must accept a connection.

Reads the daemon's own settings from the environment: GROUP_COORDINATOR_LISTENER
(space-separated PROTOCOL://HOST:PORT) or else GROUP_COORDINATOR_LISTEN (HOST:PORT).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys

from coordinator.client.connection import connect
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse


def first_listener() -> tuple[str, str, int]:
    listeners = os.environ.get("GROUP_COORDINATOR_LISTENER", "").split()
    if listeners:
        protocol, _, address = listeners[0].partition("://")
    else:
        protocol, address = "PLAINTEXT", os.environ.get("GROUP_COORDINATOR_LISTEN", "")
    host, _, port = (address or "127.0.0.1:9092").rpartition(":")
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    return protocol.upper(), host.strip("[]"), int(port)


async def api_versions(host: str, port: int) -> bool:
    conn = await asyncio.wait_for(connect(host, port, "healthcheck"), 3)
    try:
        answer = await asyncio.wait_for(conn.request(ApiVersionsRequest(), 0), 3)
        return isinstance(answer, ApiVersionsResponse) and answer.error_code == 0
    finally:
        conn.close()


def main() -> int:
    protocol, host, port = first_listener()
    try:
        if protocol == "PLAINTEXT":
            return 0 if asyncio.run(api_versions(host, port)) else 1
        socket.create_connection((host, port), 3).close()
        return 0
    except (OSError, TimeoutError) as exc:
        print(f"unhealthy: {protocol}://{host}:{port}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
