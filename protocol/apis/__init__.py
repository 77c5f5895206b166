"""The API registry: every API this package can encode and decode, by key and by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from ..schema import Struct, in_range
from .api_versions import ApiVersionsRequest, ApiVersionsResponse
from .consumer_group_describe import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from .consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from .create_topics import CreateTopicsRequest, CreateTopicsResponse
from .delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from .delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from .describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from .describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from .fetch import FetchRequest, FetchResponse
from .find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from .heartbeat import HeartbeatRequest, HeartbeatResponse
from .incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from .init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from .join_group import JoinGroupRequest, JoinGroupResponse
from .leave_group import LeaveGroupRequest, LeaveGroupResponse
from .list_groups import ListGroupsRequest, ListGroupsResponse
from .list_offsets import ListOffsetsRequest, ListOffsetsResponse
from .metadata import MetadataRequest, MetadataResponse
from .offset_commit import OffsetCommitRequest, OffsetCommitResponse
from .offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from .offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from .produce import ProduceRequest, ProduceResponse
from .sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from .sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from .sync_group import SyncGroupRequest, SyncGroupResponse


class ApiKey(IntEnum):
    """Every API this package declares, by Kafka's name; checked against the message
    declarations below, so the two cannot drift apart."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_CONFIGS = 32
    DELETE_GROUPS = 42
    SASL_AUTHENTICATE = 36
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69


API_VERSIONS_KEY = ApiKey.API_VERSIONS


@dataclass(frozen=True, slots=True)
class Api:
    key: ApiKey
    name: str
    request: type[Struct]
    response: type[Struct]

    @property
    def min_version(self) -> int:
        assert self.request.kafka is not None
        return self.request.kafka.valid[0]

    @property
    def max_version(self) -> int:
        assert self.request.kafka is not None
        return self.request.kafka.valid[1]

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        assert self.request.kafka is not None
        return in_range(version, self.request.kafka.flexible)

    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # KIP-511: ApiVersions responses always use header v0.
        if self.key == API_VERSIONS_KEY:
            return 0
        return 1 if self.is_flexible(version) else 0


def _api(name: str, request: type[Struct], response: type[Struct]) -> Api:
    assert request.kafka is not None and request.kafka.api_key is not None
    return Api(ApiKey(request.kafka.api_key), name, request, response)


ALL: tuple[Api, ...] = (
    _api("Produce", ProduceRequest, ProduceResponse),
    _api("Fetch", FetchRequest, FetchResponse),
    _api("ListOffsets", ListOffsetsRequest, ListOffsetsResponse),
    _api("Metadata", MetadataRequest, MetadataResponse),
    _api("OffsetCommit", OffsetCommitRequest, OffsetCommitResponse),
    _api("OffsetFetch", OffsetFetchRequest, OffsetFetchResponse),
    _api("FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse),
    _api("JoinGroup", JoinGroupRequest, JoinGroupResponse),
    _api("Heartbeat", HeartbeatRequest, HeartbeatResponse),
    _api("LeaveGroup", LeaveGroupRequest, LeaveGroupResponse),
    _api("SyncGroup", SyncGroupRequest, SyncGroupResponse),
    _api("DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse),
    _api("ListGroups", ListGroupsRequest, ListGroupsResponse),
    _api("SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse),
    _api("ApiVersions", ApiVersionsRequest, ApiVersionsResponse),
    _api("CreateTopics", CreateTopicsRequest, CreateTopicsResponse),
    _api("DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse),
    _api("InitProducerId", InitProducerIdRequest, InitProducerIdResponse),
    _api("DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse),
    _api("DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse),
    _api("SaslAuthenticate", SaslAuthenticateRequest, SaslAuthenticateResponse),
    _api(
        "IncrementalAlterConfigs", IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
    ),
    _api("OffsetDelete", OffsetDeleteRequest, OffsetDeleteResponse),
    _api("ConsumerGroupHeartbeat", ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    _api("ConsumerGroupDescribe", ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
)

BY_KEY: dict[int, Api] = {api.key: api for api in ALL}
BY_NAME: dict[str, Api] = {api.name: api for api in ALL}


def _screaming(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


# The enum is written out for the type checker; the declarations are the source of truth.
assert {(a.key, _screaming(a.name)) for a in ALL} == {(k, k.name) for k in ApiKey}, (
    "ApiKey does not match the message declarations"
)
