"""Asyncio clients for the daemon (or any Kafka broker): a raw connection, a connection pool
shared by many group members, a classic group member of any protocol type, a KIP-848
consumer group member, and an admin client."""

from .admin import GroupAdmin, GroupDescription, GroupListing, MemberDescription, PartitionOffsets
from .connection import KafkaConnectionClient, connect
from .consumer_member import ConsumerGroupMember
from .errors import CommitFailedError, FatalGroupError, KafkaClientError, UnsupportedApiError
from .member import GroupMember, JoinedMember, LeaderContext, MemberState
from .offsets import OffsetAndMetadata
from .pool import BrokerConnection, ConnectionPool

__all__ = [
    "BrokerConnection",
    "CommitFailedError",
    "ConnectionPool",
    "ConsumerGroupMember",
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
