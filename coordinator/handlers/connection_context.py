"""What the daemon knows about one client connection: who it is and how far its login got."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ..security.config import ANONYMOUS, Listener
from ..security.sasl import SaslSession


@dataclass(slots=True)
class ConnectionContext:
    client_host: str  # as Kafka reports it: "/127.0.0.1"
    client_id: str = ""
    listener: Listener | None = None  # None: the default PLAINTEXT listener (tests)
    principal: str = ANONYMOUS
    authenticated: bool = True  # False on a SASL listener until SaslAuthenticate succeeds
    sasl: SaslSession | None = None
    sasl_raw_tokens: bool = False  # after a v0 SaslHandshake
    close_after_reply: bool = False
    #: In front of an upstream: the upstream broker this address stands for (None: the
    #: daemon's own address), so the node id a client expects of it is that broker's.
    upstream_broker: int | None = None
    #: With ACLs or in a cluster: the groups admission let this connection heartbeat in,
    #: as things stood in ``admitted_under`` (``admission.admitted_groups``).
    admitted: dict[str, bool] | None = None
    admitted_under: AdmittedUnder | None = None


class AdmittedUnder(NamedTuple):
    """What a connection's ``admitted`` groups were admitted under."""

    authorizer: object  # the node's authorizer then: any ACL change makes a new one
    principal: str
    routing: object  # the node's routing then
    mine: Mapping[int, object] | None  # a cluster's partitions this node held, and their states
