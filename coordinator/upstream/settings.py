"""How the daemon reaches its upstream cluster: its own address, security and timeouts,
never a client's credentials."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..security.config import SecurityProtocol


@dataclass(frozen=True, slots=True)
class UpstreamSettings:
    #: The upstream cluster's bootstrap addresses.
    bootstrap: tuple[tuple[str, int], ...]
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = None
    #: CA bundle the upstream's certificate is checked against (None: the system's).
    tls_ca: Path | None = None
    #: Check the upstream certificate's host name (off for self-signed test brokers).
    tls_check_hostname: bool = True
    #: A forwarded request the upstream has not answered by then is answered with a
    #: retriable error (a Fetch: after its own max wait on top of this).
    request_timeout_ms: int = 15_000
    connect_timeout_ms: int = 5_000
    #: How often the upstream's topics are read for the groups (partition counts).
    metadata_refresh_ms: int = 5_000
    #: Log-end offsets for lag are read at most this often.
    lag_refresh_ms: int = 5_000
    #: The first of the daemon's ports for upstream brokers (the k-th broker found, on the
    #: i-th listener: this + k * listeners + i); 0: ephemeral ports (fine on one host, not
    #: behind a container's published ports).
    broker_port_base: int = 0
    #: Client-visible id of upstream broker N: N + this (ids must not meet our nodes').
    node_id_offset: int = 1000
    #: Idle upstream connections kept per upstream broker for the next client.
    idle_links_per_broker: int = 8
    #: Forwarded requests a client connection may have in flight (pipelining).
    max_in_flight: int = 32
