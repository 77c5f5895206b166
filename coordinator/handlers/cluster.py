"""Cluster-level APIs: ApiVersions, Metadata, FindCoordinator, and the virtual-topic APIs
(CreateTopics, ListOffsets, Fetch) a stock consumer needs to run its poll loop.

Every handler takes the broker, the decoded request and the connection's context, and
returns the response body (or a Deferred for a Fetch long poll).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.create_topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.apis.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    FetchResponsePartitionData,
)
from protocol.apis.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from protocol.apis.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.apis.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.errors import ErrorCode

from ..security.acls import Operation
from ..security.authz import may_create_topic, may_topic
from ..shared.catalog import NO_TOPIC_ID, Topic, valid_topic_name
from ..upstream.metadata import BrokerIds
from . import admission
from . import versions as V
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Delayed, Outcome

# KIP-511 client software name/version syntax.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

KEY_TYPE_GROUP = admission.KEY_TYPE_GROUP
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


def api_versions(
    node: Node, body: ApiVersionsRequest, version: int, conn: ConnectionContext
) -> Outcome[ApiVersionsResponse]:
    error = ErrorCode.NONE
    if version >= V.API_VERSIONS_CLIENT_SOFTWARE and not (
        _SOFTWARE.fullmatch(body.client_software_name)
        and _SOFTWARE.fullmatch(body.client_software_version)
    ):
        error = ErrorCode.INVALID_REQUEST
    if version >= V.API_VERSIONS_CLUSTER_CHECK:
        refused = cluster_check(node, body, conn)
        if refused is not None:
            return Outcome(ApiVersionsResponse(error_code=refused))  # no keys, as Kafka
    return Outcome(ApiVersionsResponse(error_code=error, api_keys=node.api_versions))


def cluster_check(
    node: Node, body: ApiVersionsRequest, conn: ConnectionContext
) -> ErrorCode | None:
    """ApiVersions v5 (KIP-1242): the cluster id and node id the client expects come both
    or neither (INVALID_REQUEST); when they do not name this cluster and the node this
    address stands for, the client has followed stale metadata (REBOOTSTRAP_REQUIRED)."""
    if (body.cluster_id is None) != (body.node_id == -1):
        return ErrorCode.INVALID_REQUEST
    if body.cluster_id is None:
        return None
    if body.cluster_id != node.settings.cluster_id or body.node_id != presented_node_id(node, conn):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


def presented_node_id(node: Node, conn: ConnectionContext) -> int:
    """The node id clients are given for the address ``conn`` came in on: this node's, or
    in front of an upstream the id presented for the upstream broker it stands for."""
    upstream = node.settings.upstream
    if conn.upstream_broker is not None and upstream is not None:
        return BrokerIds(upstream.node_id_offset).visible(conn.upstream_broker)
    return node.settings.node_id


def presented_leader(node: Node, conn: ConnectionContext, partition: int) -> int:
    """The node presented as a virtual topic's partition's leader: this one, or (its lease
    run out) a live peer the caller can reach, so that clients fetch, and so look
    coordinators up, there."""
    protocol = conn.listener.protocol if conn.listener is not None else None
    stand_in = node.routing.stand_in(node.now_ms(), partition, protocol)
    return node.settings.node_id if stand_in is None else stand_in


def _partition_metadata(
    node: Node, topic: Topic, conn: ConnectionContext
) -> list[MetadataResponsePartition]:
    return [
        MetadataResponsePartition(
            error_code=0,
            partition_index=p,
            leader_id=(leader := presented_leader(node, conn, p)),
            leader_epoch=0,
            replica_nodes=[leader],
            isr_nodes=[leader],
            offline_replicas=[],
        )
        for p in range(topic.partitions)
    ]


def _topic_metadata(node: Node, topic: Topic, conn: ConnectionContext) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=0,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=False,
        partitions=_partition_metadata(node, topic, conn),
    )


def presented_brokers(node: Node, conn: ConnectionContext) -> list[MetadataResponseBroker]:
    """This node, and in a cluster every live node with a listener of the caller's security
    protocol (as Kafka lists the brokers of the caller's listener). A node whose lease has
    run out lists the others only, as Kafka's brokers leave a fenced broker out."""
    host, port = node.advertised_for(conn)
    brokers: dict[int, MetadataResponseBroker] = {}
    now = node.now_ms()
    protocol = conn.listener.protocol if conn.listener is not None else None
    if node.routing.stand_in(now, 0, protocol) is None:
        me = node.settings.node_id
        brokers[me] = MetadataResponseBroker(node_id=me, host=host, port=port)
    for other in node.routing.nodes(now):
        address = other.address_for(protocol)
        if other.node_id not in brokers and address is not None:
            brokers[other.node_id] = MetadataResponseBroker(
                node_id=other.node_id, host=address[0], port=address[1]
            )
    return [brokers[n] for n in sorted(brokers)]


def metadata(
    node: Node, body: MetadataRequest, version: int, conn: ConnectionContext
) -> Outcome[MetadataResponse]:
    brokers = presented_brokers(node, conn)
    # v0: an empty list means every topic; v1+: null means every topic, empty means none.
    all_topics = body.topics is None or (
        version < V.METADATA_NULL_MEANS_ALL_TOPICS and not body.topics
    )
    topics: list[MetadataResponseTopic] = []
    out: Outcome[MetadataResponse] = Outcome(MetadataResponse())
    if not all_topics and version < V.METADATA_BY_TOPIC_ID:
        refused = _topic_ids_before_v12(body)
        if refused is not None:
            return Outcome(
                MetadataResponse(
                    brokers=brokers,
                    cluster_id=node.settings.cluster_id,
                    controller_id=presented_leader(node, conn, 0),
                    topics=refused,
                )
            )
    if all_topics:
        topics = [
            _topic_metadata(node, t, conn)
            for t in node.catalog.all()
            if may_topic(node.security, conn, Operation.DESCRIBE, t.name)
        ]
    else:
        assert body.topics is not None
        for wanted in body.topics:
            topic = node.catalog.get(wanted.name) if wanted.name is not None else None
            if topic is None and wanted.name is None:
                topic = node.catalog.by_id(wanted.topic_id)
            name = topic.name if topic is not None else wanted.name
            if name is not None and not may_topic(node.security, conn, Operation.DESCRIBE, name):
                # Kafka says the same whether or not the topic exists.
                topics.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        name=wanted.name,
                        topic_id=wanted.topic_id,
                    )
                )
                continue
            creating = (
                topic is None
                and bool(wanted.name)
                and body.allow_auto_topic_creation
                and node.settings.auto_create_topics
            )
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if wanted.name is None:
                error = ErrorCode.UNKNOWN_TOPIC_ID  # v12+: asked by an id we do not know
            elif creating and not may_create_topic(node.security, conn, wanted.name or ""):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # Kafka: CREATE is missing
            elif creating:
                topic = node.auto_create_topic(wanted.name or "", out)
            elif topic is None and not node.settings.auto_create_topics:
                node.warn_unknown_topic(wanted.name)
            if topic is None:
                topics.append(
                    MetadataResponseTopic(
                        error_code=error,
                        name=wanted.name,
                        topic_id=wanted.topic_id,
                    )
                )
            else:
                topics.append(_topic_metadata(node, topic, conn))
    out.reply = MetadataResponse(
        brokers=brokers,
        cluster_id=node.settings.cluster_id,
        controller_id=presented_leader(node, conn, 0),
        topics=topics,
    )
    return out


_NO_TOPIC_ID = uuid.UUID(int=0)


def _topic_ids_before_v12(body: MetadataRequest) -> list[MetadataResponseTopic] | None:
    """As Kafka: before v12 a null topic name or a topic id makes the whole request
    invalid; every topic is answered INVALID_REQUEST (a null name as "", which these
    versions can encode). None: the request is valid."""
    assert body.topics is not None
    if all(t.name is not None and t.topic_id == _NO_TOPIC_ID for t in body.topics):
        return None
    return [
        MetadataResponseTopic(
            error_code=ErrorCode.INVALID_REQUEST, name=t.name or "", topic_id=t.topic_id
        )
        for t in body.topics
    ]


@dataclass(frozen=True, slots=True)
class Located:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class NotFound:
    error: ErrorCode
    message: str | None = None


def _coordinator_for(
    node: Node,
    conn: ConnectionContext,
    key_type: int,
    key: str,
    version: int,
    refused: Mapping[str, int],
) -> Located | NotFound:
    """The key's coordinator as the caller reaches it (``refused``: the group keys
    admission refused, ``admission.FIND_COORDINATOR``)."""
    if key_type == KEY_TYPE_GROUP:
        if (code := refused.get(key)) is not None:
            return NotFound(ErrorCode(code))
        return _owner_address(node, conn, key)
    if key_type == KEY_TYPE_SHARE and version < V.FIND_COORDINATOR_SHARE_KEYS:
        return NotFound(ErrorCode.INVALID_REQUEST, "Share key type needs FindCoordinator v6")
    if key_type in (KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE):
        # This daemon coordinates classic groups only.
        return NotFound(
            ErrorCode.COORDINATOR_NOT_AVAILABLE, "This node coordinates consumer groups only"
        )
    return NotFound(ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")


def _owner_address(node: Node, conn: ConnectionContext, group_id: str) -> Located | NotFound:
    """This node, or (in a cluster) the owner of the group's coordinator partition, at the
    address of the caller's listener protocol."""
    routing = node.routing
    now = node.now_ms()
    # A node whose lease has run out (cut off from the database, or just woken from a
    # pause) names where its groups go without it, never itself (routing.py).
    owner = routing.coordinator(group_id, now)
    if owner is None and routing.clustered:
        return NotFound(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The group's coordinator is moving")
    if owner is None or owner == node.settings.node_id:
        return Located(node.settings.node_id, *node.advertised_for(conn))
    protocol = conn.listener.protocol if conn.listener is not None else None
    address = next(n for n in routing.nodes(now) if n.node_id == owner).address_for(protocol)
    if address is None:
        return NotFound(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator has no such listener")
    return Located(owner, *address)


def find_coordinator(
    node: Node,
    body: FindCoordinatorRequest,
    version: int,
    conn: ConnectionContext,
    refused: Mapping[str, int],
) -> Outcome[FindCoordinatorResponse]:
    if version < V.FIND_COORDINATOR_BATCHED:
        found = _coordinator_for(node, conn, body.key_type, body.key, version, refused)
        if isinstance(found, NotFound):
            return Outcome(
                FindCoordinatorResponse(
                    error_code=found.error,
                    error_message=found.message or found.error.name,
                    node_id=-1,
                    host="",
                    port=-1,
                )
            )
        return Outcome(
            FindCoordinatorResponse(
                error_code=0,
                error_message=None,
                node_id=found.node_id,
                host=found.host,
                port=found.port,
            )
        )
    coordinators = []
    for key in body.coordinator_keys:
        found = _coordinator_for(node, conn, body.key_type, key, version, refused)
        if isinstance(found, NotFound):
            coordinators.append(
                FindCoordinatorResponseCoordinator(
                    key=key,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=found.error,
                    error_message=found.message,
                )
            )
        else:
            coordinators.append(
                FindCoordinatorResponseCoordinator(
                    key=key,
                    node_id=found.node_id,
                    host=found.host,
                    port=found.port,
                    error_code=0,
                    error_message="",
                )
            )
    return Outcome(FindCoordinatorResponse(coordinators=coordinators))


def create_topics(
    node: Node, body: CreateTopicsRequest, version: int, conn: ConnectionContext
) -> Outcome[CreateTopicsResponse]:
    results = []
    seen: set[str] = set()
    out: Outcome[CreateTopicsResponse] = Outcome(CreateTopicsResponse())
    for t in body.topics:
        partitions = len(t.assignments) if t.assignments else t.num_partitions
        if partitions == -1:
            partitions = node.settings.num_partitions
        error, message = ErrorCode.NONE, None
        if t.name in seen:
            error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request"
        elif not may_create_topic(node.security, conn, t.name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            message = "Authorization failed."
        elif not valid_topic_name(t.name):
            error, message = ErrorCode.INVALID_TOPIC_EXCEPTION, f"Illegal topic name {t.name!r}"
        elif node.catalog.get(t.name) is not None:
            error, message = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
        elif partitions < 1:
            error, message = ErrorCode.INVALID_PARTITIONS, "Number of partitions must be >= 1"
        elif not node.catalog_has_room(partitions, ErrorCode.POLICY_VIOLATION, out):
            error = ErrorCode.POLICY_VIOLATION
            message = "The coordinator's topic or partition limit would be exceeded"
        elif t.replication_factor not in (-1, 1) and not t.assignments:
            error = ErrorCode.INVALID_REPLICATION_FACTOR
            message = "This node is the only broker: replication factor must be 1"
        seen.add(t.name)
        if not error and not body.validate_only:
            node.create_topic(t.name, partitions, out)
        results.append(
            CreateTopicsResponseCreatableTopicResult(
                name=t.name,
                topic_id=node.catalog.id_for(t.name) if not error else NO_TOPIC_ID,
                error_code=error,
                error_message=message,
                num_partitions=partitions if not error else -1,
                replication_factor=1 if not error else -1,
                configs=[] if not error else None,
            )
        )
    out.reply = CreateTopicsResponse(topics=results)
    return out


def list_offsets(
    node: Node, body: ListOffsetsRequest, version: int, conn: ConnectionContext
) -> Outcome[ListOffsetsResponse]:
    topics = []
    for t in body.topics:
        partitions = []
        described = may_topic(node.security, conn, Operation.DESCRIBE, t.name)
        for p in t.partitions:
            if not described:
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                )
            elif not node.catalog.has_partition(t.name, p.partition_index):
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    )
                )
            elif version < V.LIST_OFFSETS_SPECIAL_TIMESTAMPS.get(p.timestamp, 0):
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.UNSUPPORTED_VERSION,
                    )
                )
            elif p.timestamp in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
                # An empty log: earliest = latest = 0.
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=0,
                        timestamp=-1,
                        offset=0,
                        leader_epoch=0 if version >= V.LIST_OFFSETS_LEADER_EPOCH else -1,
                    )
                )
            else:
                # No record has a timestamp at or after any time: no offset (-1), as Kafka.
                # So for -3 to -6 too: a virtual topic has no records and no tiered storage.
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=0,
                        timestamp=-1,
                        offset=-1,
                        leader_epoch=-1,
                    )
                )
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=partitions))
    return Outcome(ListOffsetsResponse(topics=topics))


def fetch(
    node: Node, body: FetchRequest, version: int, conn: ConnectionContext
) -> Outcome[FetchResponse]:
    responses = []
    by_id = version >= V.FETCH_BY_TOPIC_ID
    for t in body.topics:
        partitions = []
        if by_id:  # v13+ name topics by id only
            found = node.catalog.by_id(t.topic_id)
            name = found.name if found is not None else None
        else:
            name = t.topic
        readable = name is not None and may_topic(node.security, conn, Operation.READ, name)
        for p in t.partitions:
            known = readable and node.catalog.has_partition(name or "", p.partition)
            if name is None:
                error = ErrorCode.UNKNOWN_TOPIC_ID  # as Kafka: an id it does not know
            elif readable:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            partitions.append(
                FetchResponsePartitionData(
                    partition_index=p.partition,
                    error_code=0 if known else error,
                    high_watermark=0 if known else -1,
                    last_stable_offset=0 if known else -1,
                    log_start_offset=0 if known else -1,
                    aborted_transactions=[] if known else None,
                    records=b"",
                )
            )
        responses.append(
            FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=partitions)
        )
    # Sessionless (session id 0): the client keeps sending full fetch requests.
    response = FetchResponse(error_code=0, session_id=0, responses=responses)
    wait_ms = min(max(body.max_wait_ms, 0), node.settings.fetch_max_wait_cap_ms)
    if wait_ms == 0 or node.closing:
        return Outcome(response)
    # There are never records to return, so a fetch waits out its max wait (a long poll),
    # or until the client sends something else on the connection: answers go in order, and
    # a FindCoordinator held 500 ms behind a fetch kept librdkafka members from ever
    # reaching a moved coordinator (docs/cluster.md, "Failover of librdkafka members").
    return Outcome(Delayed(wait_ms, response, until_next_request=True))
