"""Every group API the daemon advertises goes through admission: a principal without ACLs
on the group is refused with GROUP_AUTHORIZATION_FAILED, and in a cluster a group this node
does not coordinate is refused as Kafka does, at every version, before anything is stored.
A new route that names groups cannot be served without a row in the admission table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from coordinator.cluster.placement import partition_for
from coordinator.cluster.routing import ClusterRouting, PartitionState
from coordinator.handlers import admission
from coordinator.handlers.admission import GROUP_RESOURCE
from coordinator.handlers.classic_groups import heartbeat, heartbeat_refused
from coordinator.handlers.dispatcher import Dispatcher, names_groups
from coordinator.security.config import SecuritySettings
from coordinator.settings.config import Settings
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.delete_groups import DeleteGroupsRequest
from protocol.apis.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.apis.describe_groups import DescribeGroupsRequest
from protocol.apis.find_coordinator import FindCoordinatorRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.apis.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from protocol.apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from protocol.apis.sync_group import SyncGroupRequest
from protocol.errors import ErrorCode
from protocol.schema import Struct, field_specs, in_range
from tests.coordinator.shell.pipeline import Answer, Pipeline

GROUP = "g"


def _offset_fetch(version: int) -> Struct:
    if version >= 8:
        return OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=GROUP,
                    topics=[OffsetFetchRequestTopics(name="orders", partition_indexes=[0])],
                )
            ]
        )
    return OffsetFetchRequest(
        group_id=GROUP, topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0])]
    )


#: A request naming GROUP, per group API (ListGroups names none).
REQUESTS: dict[int, Callable[[int], Struct]] = {
    ApiKey.FIND_COORDINATOR: lambda v: (
        FindCoordinatorRequest(key=GROUP)
        if v < 4
        else FindCoordinatorRequest(coordinator_keys=[GROUP])
    ),
    ApiKey.JOIN_GROUP: lambda v: JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="m",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    ),
    ApiKey.SYNC_GROUP: lambda v: SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="m"),
    ApiKey.HEARTBEAT: lambda v: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m"),
    ApiKey.LEAVE_GROUP: lambda v: (
        LeaveGroupRequest(group_id=GROUP, member_id="m")
        if v < 3
        else LeaveGroupRequest(
            group_id=GROUP, members=[LeaveGroupRequestMemberIdentity(member_id="m")]
        )
    ),
    ApiKey.OFFSET_COMMIT: lambda v: OffsetCommitRequest(
        group_id=GROUP,
        topics=[
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=5)],
            )
        ],
    ),
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.DESCRIBE_GROUPS: lambda v: DescribeGroupsRequest(groups=[GROUP]),
    ApiKey.DELETE_GROUPS: lambda v: DeleteGroupsRequest(groups_names=[GROUP]),
    ApiKey.OFFSET_DELETE: lambda v: OffsetDeleteRequest(
        group_id=GROUP,
        topics=[
            OffsetDeleteRequestTopic(
                name="orders", partitions=[OffsetDeleteRequestPartition(partition_index=0)]
            )
        ],
    ),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: lambda v: ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id="m", member_epoch=0, rebalance_timeout_ms=10_000
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: lambda v: ConsumerGroupDescribeRequest(group_ids=[GROUP]),
    ApiKey.DESCRIBE_CONFIGS: lambda v: DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=GROUP)]
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda v: IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name=GROUP,
                configs=[
                    IncrementalAlterConfigsAlterableConfig(
                        name="consumer.session.timeout.ms", config_operation=0, value="50000"
                    )
                ],
            )
        ]
    ),
}


def error_codes(value: Any, version: int) -> Iterator[int]:
    """Every error code a response of ``version`` carries, at any depth."""
    if isinstance(value, Struct):
        for name, spec in field_specs(type(value)):
            if not in_range(version, spec.versions):
                continue
            item = getattr(value, name)
            if name == "error_code":
                yield item
            else:
                yield from error_codes(item, version)
    elif isinstance(value, list):
        for item in value:
            yield from error_codes(item, version)


def advertised(p: Pipeline) -> set[int]:
    return {v.api_key for v in p.node.api_versions}


def answers(p: Pipeline, routed_only: bool = False) -> Iterator[tuple[str, set[int]]]:
    """Each group API at each version, sent for GROUP: (which, the error codes answered);
    ``routed_only``: those a node answers only for the groups it coordinates."""
    for key in sorted(REQUESTS):
        if routed_only and not admission.BY_API_KEY[key].routed:
            continue
        api = BY_KEY[key]
        for version in range(api.min_version, api.max_version + 1):
            got = p.send(p.connect(), REQUESTS[key](version), version)
            assert isinstance(got, Answer) and got.body is not None, (api.name, version, got)
            yield f"{api.name} v{version}", set(error_codes(got.body, version))


def test_every_advertised_api_naming_groups_has_an_admission_row() -> None:
    p = Pipeline()
    naming = {k for k in advertised(p) if names_groups(BY_KEY[k].request)}
    assert naming == set(REQUESTS) - {ApiKey.FIND_COORDINATOR}
    # The table holds the group APIs the daemon serves (the configs ones: their resources
    # may be groups), FindCoordinator (its keys may be groups) and ListGroups (it lists them).
    assert set(admission.BY_API_KEY) == naming | {ApiKey.FIND_COORDINATOR, ApiKey.LIST_GROUPS}
    assert set(admission.BY_API_KEY) <= advertised(p)


def test_a_route_naming_groups_without_admission_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dispatcher = Dispatcher(Pipeline().node)
    with pytest.raises(ValueError, match="needs a refusal"):
        dispatcher.route(HeartbeatRequest, heartbeat)  # a one-group API names its refusal
    monkeypatch.delitem(admission.BY_API_KEY, ApiKey.HEARTBEAT)
    with pytest.raises(LookupError, match="needs admission"):
        dispatcher.route(HeartbeatRequest, heartbeat, heartbeat_refused)
    assert not dispatcher.supports(ApiKey.HEARTBEAT)


def test_every_group_api_refuses_a_principal_without_acls_at_every_version() -> None:
    p = Pipeline(Settings(security=SecuritySettings(acls_enabled=True)))
    p.node.catalog.create("orders", 1)
    for which, codes in answers(p):
        assert codes == {ErrorCode.GROUP_AUTHORIZATION_FAILED}, which
    assert p.records == [] and GROUP not in p.node.groups.groups  # nothing stored


@pytest.mark.parametrize(
    ("state", "code"),
    [
        (None, ErrorCode.NOT_COORDINATOR),
        (PartitionState.LOADING, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    ],
)
def test_every_group_api_refuses_a_group_this_node_does_not_coordinate(
    state: PartitionState | None, code: ErrorCode
) -> None:
    p = Pipeline(Settings(node_id=1))
    p.node.catalog.create("orders", 1)
    mine = {} if state is None else {partition_for(GROUP, 6): state}
    p.node.routing = ClusterRouting(
        node_id=1, partitions=6, mine=mine, lease_valid_until_ms=p.clock.now_ms() + 60_000
    )
    for which, codes in answers(p, routed_only=True):
        if which.startswith("Heartbeat ") and code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            assert codes == {ErrorCode.NONE}, which  # Kafka answers it blindly
        else:
            assert codes == {code}, which
    assert p.records == [] and GROUP not in p.node.groups.groups
