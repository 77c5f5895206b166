"""Authorization checks as the request handlers need them (Kafka's KafkaApis checks).

What each group API (and console action) needs on its groups is one table,
``coordinator.handlers.admission``, applied before the handler; these are its checks and
the per-topic ones handlers make inside an admitted request:

READ on a group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit.
DESCRIBE on a group (implied by READ and DELETE): OffsetFetch, DescribeGroups, ListGroups
(which lists only such groups unless DESCRIBE on the cluster), FindCoordinator.
DELETE on a group: DeleteGroups, OffsetDelete.
READ on a topic: OffsetCommit, OffsetDelete, Fetch; DESCRIBE on a topic: OffsetFetch,
Metadata, ListOffsets; CREATE on the cluster or the topic: CreateTopics, auto-creation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .acls import CLUSTER_NAME, Operation, ResourceType

if TYPE_CHECKING:
    from ..handlers.connection_context import ConnectionContext
    from .runtime import Security

# DescribeGroups' authorized_operations bits (1 << AclOperation code).
_GROUP_OPERATION_BITS = {
    Operation.READ: 1 << 3,
    Operation.DELETE: 1 << 6,
    Operation.DESCRIBE: 1 << 8,
}
# Without an authorizer Kafka reports every group operation, configs included.
ALL_GROUP_OPERATIONS = 3400


def may_group(security: Security, ctx: ConnectionContext, operation: Operation, group: str) -> bool:
    return security.may(ctx.principal, ctx.client_host, operation, ResourceType.GROUP, group)


def may_topic(security: Security, ctx: ConnectionContext, operation: Operation, topic: str) -> bool:
    return security.may(ctx.principal, ctx.client_host, operation, ResourceType.TOPIC, topic)


def may_cluster(security: Security, ctx: ConnectionContext, operation: Operation) -> bool:
    return security.may(
        ctx.principal, ctx.client_host, operation, ResourceType.CLUSTER, CLUSTER_NAME
    )


def may_create_topic(security: Security, ctx: ConnectionContext, topic: str) -> bool:
    return may_cluster(security, ctx, Operation.CREATE) or may_topic(
        security, ctx, Operation.CREATE, topic
    )


def group_operations(security: Security, ctx: ConnectionContext, group: str) -> int:
    """DescribeGroups v3+ ``authorized_operations`` for this principal."""
    if not security.acls_enabled:
        return ALL_GROUP_OPERATIONS
    bits = 0
    for operation, bit in _GROUP_OPERATION_BITS.items():
        if may_group(security, ctx, operation, group):
            bits |= bit
    return bits
