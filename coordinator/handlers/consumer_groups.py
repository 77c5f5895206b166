"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848): the wire messages to the
consumer-group state machine and back. Topics travel by id on the wire and by name in the
state machine; the catalog maps one to the other (an owned partition of a topic id this
node does not know is dropped, as Kafka drops topics missing from its metadata image)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from protocol.apis.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseAssignment,
    ConsumerGroupDescribeResponseDescribedGroup,
    ConsumerGroupDescribeResponseMember,
    ConsumerGroupDescribeResponseTopicPartitions,
)
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from protocol.errors import ErrorCode

from ..group.consumer.admin import DescribedConsumerGroup
from ..group.consumer.member import Partitions
from ..group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from ..security.acls import Operation
from ..security.authz import group_operations, may_topic
from ..shared.catalog import topic_id_for
from ..shared.topic_regex import Resolution
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Offloaded, Outcome, Pending, call


def _render(
    r: ConsumerHeartbeatResult, topic_id: Callable[[str], uuid.UUID]
) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if r.assignment is not None:
        assignment = ConsumerGroupHeartbeatResponseAssignment(
            topic_partitions=[
                ConsumerGroupHeartbeatResponseTopicPartitions(
                    topic_id=topic_id(topic), partitions=sorted(parts)
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
    return _render(ConsumerHeartbeatResult(code, message), topic_id_for)  # no assignment


def heartbeat_refused(
    body: ConsumerGroupHeartbeatRequest, version: int, code: ErrorCode
) -> ConsumerGroupHeartbeatResponse:
    return _refused(code)


def consumer_group_heartbeat(
    node: Node, body: ConsumerGroupHeartbeatRequest, version: int, conn: ConnectionContext
) -> Outcome[ConsumerGroupHeartbeatResponse]:
    # Admitted (``admission.CONSUMER_GROUP_HEARTBEAT``: READ on the group, DESCRIBE on each
    # topic subscribed by name, this node its coordinator); ``heartbeat_refused`` else.
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
    pattern = body.subscribed_topic_regex or None
    wanted = node.groups.regexes_to_resolve(body.group_id, pattern, node.now_ms())
    if not wanted:
        return _heartbeat(node, inp)
    return _resolving(node, conn, inp, wanted)


def _heartbeat(node: Node, inp: ConsumerHeartbeatInput) -> Outcome[ConsumerGroupHeartbeatResponse]:
    token = Pending()
    return call(
        node.groups.consumer_group_heartbeat(token, inp, node.now_ms()),
        token,
        lambda r: _render(r, node.catalog.id_for),
        _refused,
    )


def _resolving(
    node: Node, conn: ConnectionContext, inp: ConsumerHeartbeatInput, wanted: frozenset[str]
) -> Outcome[ConsumerGroupHeartbeatResponse]:
    """Resolve the patterns off the event loop (the regex worker), then heartbeat with
    what they match among the topics the member may describe (Kafka: KAFKA-18813). A
    member bringing a new pattern waits for it; a group's patterns resolved again for new
    topics are resolved for one heartbeat at a time, the others go on with what the group
    has."""
    resolver = node.regex_resolver
    count = len(node.catalog)
    known = resolver.known(wanted, count)
    if known is not None:
        return _heartbeat(node, _with(node, conn, inp, known, count))
    pattern = inp.subscribed_topic_regex
    refresh = not pattern or node.groups.regex_resolved(inp.group_id, pattern)
    if refresh and inp.group_id in resolver.refreshing:
        return _heartbeat(node, inp)
    topics = [t.name for t in node.catalog.all()]
    if all((p, count) in resolver.inflight for p in wanted):
        # Another heartbeat resolves them (members joining with one pattern at once).
        return Outcome(
            Offloaded(
                lambda: resolver.resolve(wanted, topics, reserved=False),
                lambda resolution: _heartbeat(node, _with(node, conn, inp, resolution, count)),
                resolver.executor,
            )
        )
    if not resolver.reserve():
        if refresh:
            return _heartbeat(node, inp)  # a later heartbeat resolves them
        return Outcome(
            _refused(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "Too many regular expressions are being resolved; retry.",
            )
        )
    group_id = inp.group_id
    if refresh:
        resolver.refreshing.add(group_id)
    resolver.inflight.update((p, count) for p in wanted)

    def work() -> Resolution:
        try:
            return resolver.resolve(wanted, topics)
        finally:
            resolver.refreshing.discard(group_id)

    def then(resolution: Resolution) -> Outcome[ConsumerGroupHeartbeatResponse]:
        return _heartbeat(node, _with(node, conn, inp, resolution, len(topics)))

    return Outcome(Offloaded(work, then, resolver.executor))


def _with(
    node: Node,
    conn: ConnectionContext,
    inp: ConsumerHeartbeatInput,
    resolution: Resolution,
    topic_count: int,
) -> ConsumerHeartbeatInput:
    """The heartbeat with the resolution, each pattern's topics those the member may
    describe."""
    allowed: dict[str, bool] = {}

    def describable(topic: str) -> bool:
        if topic not in allowed:
            allowed[topic] = may_topic(node.security, conn, Operation.DESCRIBE, topic)
        return allowed[topic]

    visible = {
        p: m if isinstance(m, str) else frozenset(filter(describable, m))
        for p, m in resolution.items()
    }
    return replace(inp, resolved=visible, resolved_topics=topic_count)


#: ConsumerGroupDescribe v1+ says which protocol each member speaks (KIP-1099).
MEMBER_TYPE_VERSION = 1
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # Kafka's MemberType
NO_OPERATIONS = -2147483648


def _assignment(
    parts: dict[str, list[int]], topic_id: Callable[[str], uuid.UUID]
) -> ConsumerGroupDescribeResponseAssignment:
    return ConsumerGroupDescribeResponseAssignment(
        topic_partitions=[
            ConsumerGroupDescribeResponseTopicPartitions(
                topic_id=topic_id(topic), topic_name=topic, partitions=ps
            )
            for topic, ps in parts.items()
        ]
    )


def _described(
    node: Node, conn: ConnectionContext, g: DescribedConsumerGroup, version: int, ops: bool
) -> ConsumerGroupDescribeResponseDescribedGroup:
    topics = {
        t
        for m in g.members
        for t in (*m.subscribed_topic_names, *m.assignment, *m.target_assignment)
    }
    error, message = g.error_code, g.error_message
    if not error and any(not may_topic(node.security, conn, Operation.DESCRIBE, t) for t in topics):
        # Kafka: a client may not learn of topics it may not describe.
        error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        message = "The described group uses topics that the client is not authorized to describe."
    if error:
        return ConsumerGroupDescribeResponseDescribedGroup(
            error_code=error,
            error_message=message,
            group_id=g.group_id,
            group_state="",
            group_epoch=0,
            assignment_epoch=0,
            assignor_name="",
            members=[],
        )
    return ConsumerGroupDescribeResponseDescribedGroup(
        error_code=0,
        group_id=g.group_id,
        group_state=g.group_state,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor_name=g.assignor_name,
        members=[
            ConsumerGroupDescribeResponseMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_assignment(m.assignment, node.catalog.id_for),
                target_assignment=_assignment(m.target_assignment, node.catalog.id_for),
                member_type=(CLASSIC_MEMBER if m.classic else CONSUMER_MEMBER)
                if version >= MEMBER_TYPE_VERSION
                else -1,
            )
            for m in g.members
        ],
        authorized_operations=(
            group_operations(node.security, conn, g.group_id) if ops else NO_OPERATIONS
        ),
    )


def consumer_group_describe(
    node: Node,
    body: ConsumerGroupDescribeRequest,
    version: int,
    conn: ConnectionContext,
    refused: Mapping[str, int],
) -> Outcome[ConsumerGroupDescribeResponse]:
    described = {
        d.group_id: d
        for d in node.groups.consumer_group_describe(
            [g for g in body.group_ids if g not in refused]
        )
    }
    for group_id, code in refused.items():  # by admission: unauthorized, or not here
        described[group_id] = DescribedConsumerGroup(group_id, code)
    groups = []
    for group_id in body.group_ids:
        d = described[group_id]
        groups.append(_described(node, conn, d, version, body.include_authorized_operations))
    return Outcome(ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=groups))
