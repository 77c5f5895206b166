"""Asyncio clients for the daemon (or any Kafka broker): a raw connection, a connection pool
shared by many group members, a group member of any protocol type, and an admin client."""

from .admin import GroupAdmin, GroupDescription, GroupListing, MemberDescription, PartitionOffsets
from .connection import KafkaConnectionClient, connect
from .errors import CommitFailedError, FatalGroupError, KafkaClientError, UnsupportedApiError
from .member import GroupMember, JoinedMember, LeaderContext, MemberState
from .offsets import OffsetAndMetadata
from .pool import BrokerConnection, ConnectionPool

__all__ = [
    "BrokerConnection",
    "CommitFailedError",
    "ConnectionPool",
    "FatalGroupError",
    "GroupAdmin",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "JoinedMember",
    "KafkaClientError",
    "KafkaConnectionClient",
    "LeaderContext",
    "MemberDescription",
    "MemberState",
    "OffsetAndMetadata",
    "PartitionOffsets",
    "UnsupportedApiError",
    "connect",
]
