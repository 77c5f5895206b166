"""What the daemon serves: one handler per request class. ApiVersions advertises exactly
these, with the version ranges their message declarations give."""

from __future__ import annotations

from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.create_topics import CreateTopicsRequest
from protocol.apis.delete_groups import DeleteGroupsRequest
from protocol.apis.describe_configs import DescribeConfigsRequest
from protocol.apis.describe_groups import DescribeGroupsRequest
from protocol.apis.fetch import FetchRequest
from protocol.apis.find_coordinator import FindCoordinatorRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.incremental_alter_configs import IncrementalAlterConfigsRequest
from protocol.apis.join_group import JoinGroupRequest
from protocol.apis.leave_group import LeaveGroupRequest
from protocol.apis.list_groups import ListGroupsRequest
from protocol.apis.list_offsets import ListOffsetsRequest
from protocol.apis.metadata import MetadataRequest
from protocol.apis.offset_commit import OffsetCommitRequest
from protocol.apis.offset_delete import OffsetDeleteRequest
from protocol.apis.offset_fetch import OffsetFetchRequest
from protocol.apis.produce import ProduceRequest
from protocol.apis.sasl_authenticate import SaslAuthenticateRequest
from protocol.apis.sasl_handshake import SaslHandshakeRequest
from protocol.apis.sync_group import SyncGroupRequest

from ..security import handlers as sasl
from . import classic_groups, cluster, configs, consumer_groups, group_admin, offsets, produce
from .dispatcher import Dispatcher
from .node import Node


def daemon_dispatcher(node: Node) -> Dispatcher:
    d = Dispatcher(node)
    d.route(ApiVersionsRequest, cluster.api_versions)
    d.route(MetadataRequest, cluster.metadata)
    d.route_each(FindCoordinatorRequest, cluster.find_coordinator)
    d.route(CreateTopicsRequest, cluster.create_topics)
    d.route(ListOffsetsRequest, cluster.list_offsets)
    d.route(FetchRequest, cluster.fetch)
    d.route(ProduceRequest, produce.produce)
    # The group APIs, admitted by their row of the admission table: a one-group API gives
    # its answer to a refusal, a batch one is told which of its groups were refused.
    d.route(JoinGroupRequest, classic_groups.join_group, classic_groups.join_refused)
    d.route(SyncGroupRequest, classic_groups.sync_group, classic_groups.sync_refused)
    d.route(HeartbeatRequest, classic_groups.heartbeat, classic_groups.heartbeat_refused)
    d.route(LeaveGroupRequest, classic_groups.leave_group, classic_groups.leave_refused)
    d.route(OffsetCommitRequest, offsets.offset_commit, offsets.commit_refused)
    d.route_each(OffsetFetchRequest, offsets.offset_fetch)
    d.route_each(DescribeGroupsRequest, group_admin.describe_groups)
    d.route(ListGroupsRequest, group_admin.list_groups)
    d.route_each(DeleteGroupsRequest, group_admin.delete_groups)
    d.route(OffsetDeleteRequest, offsets.offset_delete, offsets.offset_delete_refused)
    d.route(
        ConsumerGroupHeartbeatRequest,
        consumer_groups.consumer_group_heartbeat,
        consumer_groups.heartbeat_refused,
    )
    d.route_each(ConsumerGroupDescribeRequest, consumer_groups.consumer_group_describe)
    d.route_each(DescribeConfigsRequest, configs.describe_configs)
    d.route_each(IncrementalAlterConfigsRequest, configs.incremental_alter_configs)
    d.route(SaslHandshakeRequest, sasl.sasl_handshake)
    d.route(SaslAuthenticateRequest, sasl.sasl_authenticate)
    return d
