"""Admission: whether a request may act on a group here, one table for every route.

A route (a group API, or one of the console's actions) names the ACL operation it needs on
each group, where its group ids are read, and whether this node must coordinate the group
to answer. ``refusal`` applies a route to one group in Kafka's order: the group's ACL
(GROUP_AUTHORIZATION_FAILED), the topics a route refuses whole (a ConsumerGroupHeartbeat's
subscribed names: TOPIC_AUTHORIZATION_FAILED), then the group's coordinator in a cluster
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS). The dispatcher, the heartbeat lane and the
console's actions all admit through it, so a route cannot be served without admission
(``Dispatcher.route`` refuses a group API missing here).

How a refusal is answered stays each API's own: a route of one group answers its request
with the code (the ``refuse`` its handler module gives the dispatcher); a batch route is
told which of its groups were refused and answers each of those with its code
(DescribeGroups, DeleteGroups, OffsetFetch, ConsumerGroupDescribe); a listing keeps only
the groups the principal may describe (ListGroups). Per-topic checks
inside an admitted request (OffsetCommit's READ per partition, OffsetFetch's DESCRIBE per
topic) stay with the handler, with the operation named here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from protocol.errors import ErrorCode

from ..cluster.routing import ClusterRouting
from ..security.acls import Operation, ResourceType
from . import versions as V
from .connection_context import AdmittedUnder, ConnectionContext
from .node import Node

GROUP_AUTHORIZATION_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class Answer(Enum):
    """How a route answers the groups admission refuses."""

    ONE = "one"  # one group: the whole request is answered with the code
    EACH = "each"  # several groups: each refused one is answered with its code
    LISTED = "listed"  # the groups come from the state: the ones refused are left out


#: A route's request body and version -> the group ids it names.
GroupIds = Callable[[Any, int], Sequence[str]]
#: A route's request body -> the topics it is refused whole for if one is not allowed.
TopicNames = Callable[[Any], Iterable[str]]


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    #: The ACL operation the route needs on each group it names.
    operation: Operation
    answer: Answer
    #: Where the request names its group(s) (None: a listing, the groups are the state's).
    group_ids: GroupIds | None
    #: Whether a group this node does not coordinate is refused (Kafka's NOT_COORDINATOR).
    routed: bool = True
    #: The ACL operation each topic the route touches needs (checked by the handler per
    #: topic or partition, or here for ``whole_topics``).
    topics: Operation | None = None
    #: Topics checked here, before the coordinator: one denied refuses the whole request.
    whole_topics: TopicNames | None = None


def checks(node: Node) -> bool:
    """Whether admission can refuse anything on this node now (ACLs on, or a cluster):
    without, every route is admitted and the callers skip it."""
    return node.security.acls_enabled or node.routing.clustered


def refusal(
    node: Node,
    principal: str,
    host: str,
    route: Route,
    group_id: str,
    body: Any = None,
    now_ms: int | None = None,
) -> ErrorCode | None:
    """None when ``principal`` (from ``host``) may take ``route`` for ``group_id`` here;
    else the error Kafka answers with. ``body`` is read only for ``whole_topics``; ``now_ms``
    (default: the node's clock) dates the coordinator's lease."""
    security = node.security
    if security.acls_enabled:
        if not security.may(principal, host, route.operation, ResourceType.GROUP, group_id):
            return GROUP_AUTHORIZATION_FAILED
        if route.whole_topics is not None:
            operation = route.topics
            assert operation is not None
            for topic in route.whole_topics(body):
                if not security.may(principal, host, operation, ResourceType.TOPIC, topic):
                    return TOPIC_AUTHORIZATION_FAILED
    if route.routed:
        routing = node.routing
        if routing.clustered:
            return routing.refusal(group_id, node.now_ms() if now_ms is None else now_ms)
    return None


#: Groups a connection's ``admitted`` memo holds at most (an ACL by prefix can allow
#: endless names): past it the memo starts afresh.
ADMITTED_GROUPS_KEPT = 1024


def admitted_groups(node: Node, conn: ConnectionContext) -> dict[str, bool]:
    """The groups admission let ``conn`` heartbeat in, as things stand now: its principal
    may READ them under the node's authorizer of now (ACLs on), and this node holds their
    coordinator partitions, loaded (a cluster). The compiled heartbeat walker answers
    frames of these groups only, and leaves every other to the Python lanes, which check;
    its caller checks a cluster's lease before each walk. Any ACL change (a new
    authorizer), another principal, or any change to the partitions this node holds
    starts it afresh."""
    security, routing = node.security, node.routing
    mine = routing.mine if isinstance(routing, ClusterRouting) else None
    known = conn.admitted_under
    if (
        conn.admitted is None
        or known is None
        or known.authorizer is not security.authorizer
        or known.principal != conn.principal
        or known.routing is not routing
        or known.mine != mine
    ):
        held = None if mine is None else dict(mine)  # a copy: ``mine`` changes in place
        conn.admitted = {}
        conn.admitted_under = AdmittedUnder(security.authorizer, conn.principal, routing, held)
    return conn.admitted


def note_admitted(node: Node, conn: ConnectionContext, group_id: str) -> None:
    """Admission let ``conn`` heartbeat in ``group_id`` (it checked something: ACLs or a
    cluster's placement): remember it for the compiled walker."""
    groups = admitted_groups(node, conn)
    if len(groups) >= ADMITTED_GROUPS_KEPT and group_id not in groups:
        groups.clear()
    groups[group_id] = True


def refusals(
    node: Node, principal: str, host: str, route: Route, body: Any, version: int
) -> Mapping[str, ErrorCode]:
    """The groups a batch request names that are refused, with their codes."""
    assert route.group_ids is not None
    out: dict[str, ErrorCode] = {}
    for group_id in route.group_ids(body, version):
        code = refusal(node, principal, host, route, group_id, body)
        if code is not None:
            out[group_id] = code
    return out


# -- where each request names its groups -------------------------------------------------


def _group_id(body: Any, version: int) -> Sequence[str]:
    return (body.group_id,)


def _offset_fetch_groups(body: Any, version: int) -> Sequence[str]:
    if version >= V.OFFSET_FETCH_BATCHED:
        return [g.group_id for g in body.groups]
    return (body.group_id,)


#: FindCoordinator's key type naming a group (its keys of other types are not groups).
KEY_TYPE_GROUP = 0


def _coordinator_keys(body: Any, version: int) -> Sequence[str]:
    if body.key_type != KEY_TYPE_GROUP:  # v0 has no key type: always a group
        return ()
    return body.coordinator_keys if version >= V.FIND_COORDINATOR_BATCHED else (body.key,)


#: Kafka's ConfigResource.Type GROUP (DescribeConfigs, IncrementalAlterConfigs).
GROUP_RESOURCE = 32


def _config_groups(body: Any, version: int) -> Sequence[str]:
    return [r.resource_name for r in body.resources if r.resource_type == GROUP_RESOURCE]


def _subscribed_names(body: Any) -> Iterable[str]:
    return body.subscribed_topic_names or ()


# -- the table ---------------------------------------------------------------------------

READ, DESCRIBE, DELETE = Operation.READ, Operation.DESCRIBE, Operation.DELETE

JOIN_GROUP = Route("JoinGroup", READ, Answer.ONE, _group_id)
SYNC_GROUP = Route("SyncGroup", READ, Answer.ONE, _group_id)
HEARTBEAT = Route("Heartbeat", READ, Answer.ONE, _group_id)


def heartbeat_refused_code(code: ErrorCode) -> ErrorCode:
    """What a Heartbeat refused with ``code`` is answered: a group whose coordinator
    partition is still loading gets NONE, as Kafka answers it (blindly: the member is not
    checked, and a fresh session follows the load). aiokafka, told
    COORDINATOR_LOAD_IN_PROGRESS in a heartbeat, stops coordinating until the application
    next polls and takes the error."""
    if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return ErrorCode.NONE
    return code


LEAVE_GROUP = Route("LeaveGroup", READ, Answer.ONE, _group_id)
OFFSET_COMMIT = Route("OffsetCommit", READ, Answer.ONE, _group_id, topics=READ)
OFFSET_FETCH = Route("OffsetFetch", DESCRIBE, Answer.EACH, _offset_fetch_groups, topics=DESCRIBE)
DESCRIBE_GROUPS = Route("DescribeGroups", DESCRIBE, Answer.EACH, lambda body, _version: body.groups)
# DESCRIBE on the cluster lists every group (the handler asks before filtering).
LIST_GROUPS = Route("ListGroups", DESCRIBE, Answer.LISTED, None, routed=False)
DELETE_GROUPS = Route("DeleteGroups", DELETE, Answer.EACH, lambda body, _version: body.groups_names)
OFFSET_DELETE = Route("OffsetDelete", DELETE, Answer.ONE, _group_id, topics=READ)
CONSUMER_GROUP_HEARTBEAT = Route(
    "ConsumerGroupHeartbeat",
    READ,
    Answer.ONE,
    _group_id,
    topics=DESCRIBE,  # subscribing by name needs DESCRIBE on each topic
    whole_topics=_subscribed_names,
)
CONSUMER_GROUP_DESCRIBE = Route(
    "ConsumerGroupDescribe",
    DESCRIBE,
    Answer.EACH,
    lambda body, _version: body.group_ids,
    topics=DESCRIBE,  # a group using a topic one may not describe is not described
)

# Finding a group's coordinator needs DESCRIBE on it, from any node.
FIND_COORDINATOR = Route("FindCoordinator", DESCRIBE, Answer.EACH, _coordinator_keys, routed=False)

# A group's configs (KIP-848's per-group settings); ALTER_CONFIGS implies DESCRIBE_CONFIGS.
DESCRIBE_CONFIGS = Route("DescribeConfigs", Operation.DESCRIBE_CONFIGS, Answer.EACH, _config_groups)
INCREMENTAL_ALTER_CONFIGS = Route(
    "IncrementalAlterConfigs", Operation.ALTER_CONFIGS, Answer.EACH, _config_groups
)

#: The group APIs by API key.
BY_API_KEY: dict[int, Route] = {
    10: FIND_COORDINATOR,
    11: JOIN_GROUP,
    14: SYNC_GROUP,
    12: HEARTBEAT,
    13: LEAVE_GROUP,
    8: OFFSET_COMMIT,
    9: OFFSET_FETCH,
    15: DESCRIBE_GROUPS,
    16: LIST_GROUPS,
    42: DELETE_GROUPS,
    47: OFFSET_DELETE,
    68: CONSUMER_GROUP_HEARTBEAT,
    69: CONSUMER_GROUP_DESCRIBE,
    32: DESCRIBE_CONFIGS,
    44: INCREMENTAL_ALTER_CONFIGS,
}

# The console's actions (``--http-admin``) need what the Kafka API each one is needs.
CONSOLE_DELETE_GROUP = Route("console: delete group", DELETE, Answer.ONE, None)
CONSOLE_RESET_OFFSETS = Route(
    "console: reset offsets",
    READ,
    Answer.ONE,
    None,
    topics=READ,
    whole_topics=lambda topics: topics,  # the action's one topic
)
CONSOLE_REMOVE_STATIC_MEMBER = Route("console: remove static member", READ, Answer.ONE, None)
