"""What the daemon knows about one client connection: who it is and how far its login got."""

from __future__ import annotations

from dataclasses import dataclass

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
    #: With ACLs: the groups this connection's principal was found allowed to READ, under
    #: the authorizer and principal of ``readable_under`` (``admission.readable_groups``).
    readable: dict[str, bool] | None = None
    readable_under: tuple[object, str] | None = None
