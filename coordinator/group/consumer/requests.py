"""ConsumerGroupHeartbeat in and out of the state machine, with topics by name (the API
layer maps topic ids to names and back)."""

from __future__ import annotations

from collections.abc import Mapping

from ..frozen import frozen
from .member import Partitions

#: ConsumerGroupHeartbeat v1+ (KIP-1082): the client makes its member id.
CLIENT_MEMBER_ID_VERSION = 1


@frozen
class ConsumerHeartbeatInput:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: The partitions the member owns (None: not reported in this heartbeat).
    owned: Partitions | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = CLIENT_MEMBER_ID_VERSION
    #: Patterns resolved off the event loop for this heartbeat (``regex.to_resolve``):
    #: the topics each matches, or RE2's reason it is not valid; and the topic count then.
    resolved: Mapping[str, frozenset[str] | str] | None = None
    resolved_topics: int = -1


@frozen
class ConsumerHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: The member's assignment, when the response carries one.
    assignment: Partitions | None = None
