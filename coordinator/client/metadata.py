"""Topic metadata a leader needs: partition counts of the subscribed topics."""

from __future__ import annotations

from collections.abc import Iterable

from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.errors import ErrorCode

from .pool import BrokerConnection


async def partition_counts(
    conn: BrokerConnection,
    topics: Iterable[str],
    *,
    timeout: float,
    allow_auto_topic_creation: bool = False,
) -> dict[str, int]:
    """Partition counts of the topics the broker knows; unknown topics are left out, as the
    Java consumer leaves topics without metadata out of the assignment."""
    names = sorted(set(topics))
    if not names:
        return {}
    body = MetadataRequest(
        topics=[MetadataRequestTopic(name=t) for t in names],
        allow_auto_topic_creation=allow_auto_topic_creation,
    )
    resp = await conn.call(body, timeout=timeout)
    assert isinstance(resp, MetadataResponse)
    return {
        t.name: len(t.partitions)
        for t in resp.topics
        if t.error_code == ErrorCode.NONE and t.name is not None and t.partitions
    }
