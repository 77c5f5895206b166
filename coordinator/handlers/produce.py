"""Produce: refused for every partition, with a reason.

Virtual topics hold no records, so nothing can be written. Produce is still served, because
librdkafka picks its Fetch version only when the broker serves Produce v3+ (its MsgVer2
feature); without it, its consumers fetch with a malformed v0 request in a busy loop.
"""

from __future__ import annotations

from protocol.apis.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from protocol.errors import ErrorCode

from ..security.acls import Operation
from ..security.authz import may_topic
from . import versions as V
from .connection_context import ConnectionContext
from .node import Node
from .outcome import CloseConnection, Outcome

REFUSAL = "virtual topics hold no records: this daemon is a group coordinator, not a log"


def produce(
    node: Node, body: ProduceRequest, version: int, conn: ConnectionContext
) -> Outcome[ProduceResponse]:
    if body.acks == 0:
        # No answer is expected, so a failure can only be told by closing, as Kafka does.
        raise CloseConnection("Produce with acks=0 to a virtual topic")
    by_id = version >= V.PRODUCE_BY_TOPIC_ID
    topics = []
    for t in body.topic_data:
        if by_id:
            found = node.catalog.by_id(t.topic_id)
            name = found.name if found is not None else None
        else:
            name = t.name
        partitions = []
        for p in t.partition_data:
            message: str | None = None
            if name is None:
                error = ErrorCode.UNKNOWN_TOPIC_ID
            elif not may_topic(node.security, conn, Operation.WRITE, name):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not node.catalog.has_partition(name, p.index):
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error, message = ErrorCode.POLICY_VIOLATION, REFUSAL
            partitions.append(
                PartitionProduceResponse(
                    index=p.index, error_code=error, base_offset=-1, error_message=message
                )
            )
        topics.append(
            TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=partitions)
        )
    return Outcome(ProduceResponse(responses=topics))
