"""ConsumerGroupHeartbeat (KIP-848): the wire message to the consumer-group state machine
and back. Topics travel by id on the wire and by name in the state machine; the catalog
maps one to the other (an owned partition of a topic id this node does not know is
dropped, as Kafka drops topics missing from its metadata image)."""

from __future__ import annotations

from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from protocol.errors import ErrorCode

from ..catalog import topic_id_for
from ..connection_context import ConnectionContext
from ..group.consumer.member import Partitions
from ..group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from ..node import Node
from ..security.acls import Operation
from ..security.authz import may_group, may_topic
from .groups import elsewhere
from .outcome import Outcome, Pending, call


def _render(r: ConsumerHeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if r.assignment is not None:
        assignment = ConsumerGroupHeartbeatResponseAssignment(
            topic_partitions=[
                ConsumerGroupHeartbeatResponseTopicPartitions(
                    topic_id=topic_id_for(topic), partitions=sorted(parts)
                )
                for topic, parts in sorted(r.assignment.items())
            ]
        )
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=r.error_code,
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def _refused(code: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return _render(ConsumerHeartbeatResult(code, message))


def consumer_group_heartbeat(
    node: Node, body: ConsumerGroupHeartbeatRequest, version: int, conn: ConnectionContext
) -> Outcome[ConsumerGroupHeartbeatResponse]:
    if not may_group(node.security, conn, Operation.READ, body.group_id):
        return Outcome(_refused(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    # Kafka: subscribing by name needs DESCRIBE on each topic.
    for name in body.subscribed_topic_names or []:
        if not may_topic(node.security, conn, Operation.DESCRIBE, name):
            return Outcome(_refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    if (moved := elsewhere(node, body.group_id)) is not None:
        return Outcome(_refused(moved))
    owned: Partitions | None = None
    if body.topic_partitions is not None:
        owned = {}
        for t in body.topic_partitions:
            topic = node.catalog.by_id(t.topic_id)
            if topic is not None:
                owned[topic.name] = owned.get(topic.name, frozenset()) | frozenset(t.partitions)
    for name in body.subscribed_topic_names or []:
        if node.catalog.get(name) is None:
            node.warn_unknown_topic(name)
    inp = ConsumerHeartbeatInput(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=body.subscribed_topic_names,
        subscribed_topic_regex=body.subscribed_topic_regex,
        server_assignor=body.server_assignor,
        owned=owned,
        client_id=conn.client_id,
        client_host=conn.client_host,
        api_version=version,
    )
    token = Pending()
    return call(
        node.groups.consumer_group_heartbeat(token, inp, node.now_ms()),
        token,
        _render,
        _refused,
    )
