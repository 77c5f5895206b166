"""The version matrix: every version the target advertises, of every API the suite knows,
sent once with a small well-formed request and checked for the answer Kafka gives it; and
topics named by id (KIP-516) across Metadata, Fetch, Produce and the offset APIs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.apis.delete_groups import DeleteGroupsRequest
from protocol.apis.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.apis.describe_groups import DescribeGroupsRequest
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.apis.find_coordinator import FindCoordinatorRequest
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from protocol.apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from protocol.apis.list_groups import ListGroupsRequest
from protocol.apis.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.apis.metadata import MetadataRequest, MetadataRequestTopic
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
from protocol.apis.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.apis.sync_group import SyncGroupRequest
from protocol.errors import DecodeError, ErrorCode
from protocol.schema import Struct

from ..probe import Probe, error_name
from ..registry import scenario

AREA = "Version matrix"
GROUP_RESOURCE = 32  # ConfigResource.Type GROUP
LATEST = -1  # ListOffsets: the log end offset
NOT_A_MEMBER = "not-a-member-of-this-group"

#: The version from which an API names topics by id only (KIP-516).
BY_ID_FROM = {
    ApiKey.FETCH: 13,
    ApiKey.PRODUCE: 13,
    ApiKey.OFFSET_COMMIT: 10,
    ApiKey.OFFSET_FETCH: 10,
}


@dataclass(frozen=True, slots=True)
class Subject:
    """What the requests of one run are about."""

    topic: str
    topic_id: uuid.UUID | None  # None: the target's Metadata gives no ids
    group: str  # a group nobody has joined

    def names(self, key: ApiKey, version: int) -> bool:
        return version < BY_ID_FROM.get(key, 1 << 15)


def _codes(*codes: int) -> list[int]:
    return list(codes)


def _leave(s: Subject, v: int) -> Struct:
    if v >= 3:
        return LeaveGroupRequest(
            group_id=s.group, members=[LeaveGroupRequestMemberIdentity(member_id=NOT_A_MEMBER)]
        )
    return LeaveGroupRequest(group_id=s.group, member_id=NOT_A_MEMBER)


def _leave_codes(r: Any, v: int) -> list[int]:
    # v3+ may answer for the group or per member; either way the member is unknown.
    codes = [r.error_code] + [m.error_code for m in (r.members if v >= 3 else [])]
    return [ErrorCode.UNKNOWN_MEMBER_ID] if ErrorCode.UNKNOWN_MEMBER_ID in codes else codes


def _offset_fetch(s: Subject, v: int) -> Struct:
    if v >= 8:
        topic = OffsetFetchRequestTopics(partition_indexes=[0])
        if s.names(ApiKey.OFFSET_FETCH, v):
            topic.name = s.topic
        else:
            topic.topic_id = s.topic_id or uuid.UUID(int=0)
        return OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id=s.group, topics=[topic])]
        )
    return OffsetFetchRequest(
        group_id=s.group, topics=[OffsetFetchRequestTopic(name=s.topic, partition_indexes=[0])]
    )


def _offset_fetch_codes(r: Any, v: int) -> list[int]:
    if v >= 8:
        [group] = r.groups
        return [group.error_code] + [p.error_code for t in group.topics for p in t.partitions]
    return [p.error_code for t in r.topics for p in t.partitions]


def _offset_commit(s: Subject, v: int) -> Struct:
    topic = OffsetCommitRequestTopic(
        partitions=[
            OffsetCommitRequestPartition(
                partition_index=0, committed_offset=0, committed_metadata=""
            )
        ]
    )
    if s.names(ApiKey.OFFSET_COMMIT, v):
        topic.name = s.topic
    else:
        topic.topic_id = s.topic_id or uuid.UUID(int=0)
    # Outside group management (generation -1, no member id): a plain commit.
    return OffsetCommitRequest(group_id=s.group, member_id="", topics=[topic])


def _fetch(s: Subject, v: int) -> Struct:
    part = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 16)
    topic = FetchTopic(partitions=[part])
    if s.names(ApiKey.FETCH, v):
        topic.topic = s.topic
    else:
        topic.topic_id = s.topic_id or uuid.UUID(int=0)
    return FetchRequest(max_wait_ms=0, min_bytes=0, topics=[topic])


def _produce(s: Subject, v: int) -> Struct:
    topic = TopicProduceData(partition_data=[PartitionProduceData(index=0, records=b"")])
    if s.names(ApiKey.PRODUCE, v):
        topic.name = s.topic
    else:
        topic.topic_id = s.topic_id or uuid.UUID(int=0)
    return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[topic])


def _join(s: Subject, v: int) -> Struct:
    return JoinGroupRequest(
        group_id=s.group,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=NOT_A_MEMBER,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


def _sync(s: Subject, v: int) -> Struct:
    # From v5 the protocol type and name are mandatory (else INCONSISTENT_GROUP_PROTOCOL).
    return SyncGroupRequest(
        group_id=s.group,
        generation_id=1,
        member_id=NOT_A_MEMBER,
        protocol_type="consumer" if v >= 5 else None,
        protocol_name="range" if v >= 5 else None,
        assignments=[],
    )


def _find(s: Subject, v: int) -> Struct:
    if v >= 4:
        return FindCoordinatorRequest(key_type=0, coordinator_keys=[s.group])
    return FindCoordinatorRequest(key=s.group, key_type=0)


def _find_codes(r: Any, v: int) -> list[int]:
    return [c.error_code for c in r.coordinators] if v >= 4 else [r.error_code]


def _list_offsets(s: Subject, v: int) -> Struct:
    part = ListOffsetsPartition(partition_index=0, timestamp=LATEST)
    topics = [ListOffsetsTopic(name=s.topic, partitions=[part])]
    return ListOffsetsRequest(replica_id=-1, topics=topics, timeout_ms=5000 if v >= 10 else 0)


def _create(s: Subject, v: int) -> Struct:
    # The topic the suite uses already exists: a check that changes nothing.
    topic = CreateTopicsRequestCreatableTopic(
        name=s.topic, num_partitions=1, replication_factor=1, assignments=[], configs=[]
    )
    return CreateTopicsRequest(topics=[topic], timeout_ms=5000, validate_only=True)


def _per_partition(r: Any, v: int) -> list[int]:
    topics = r.responses if hasattr(r, "responses") else r.topics
    rows = [p for t in topics for p in getattr(t, "partitions", None) or t.partition_responses]
    return [p.error_code for p in rows]


@dataclass(frozen=True, slots=True)
class Probe1:
    """One API's request, how to read its error codes, and the codes Kafka answers with
    (None: the codes are not checked, only that the answer decodes at the version)."""

    build: Callable[[Subject, int], Struct]
    codes: Callable[[Any, int], list[int]]
    expected: Callable[[int], list[int]] | None


NONE = ErrorCode.NONE
MATRIX: dict[ApiKey, Probe1] = {
    ApiKey.API_VERSIONS: Probe1(
        lambda s, v: ApiVersionsRequest(
            client_software_name="conformance", client_software_version="1"
        ),
        lambda r, v: [r.error_code],
        lambda v: _codes(NONE),
    ),
    ApiKey.METADATA: Probe1(
        lambda s, v: MetadataRequest(
            topics=[MetadataRequestTopic(name=s.topic)], allow_auto_topic_creation=v < 4
        ),
        lambda r, v: [t.error_code for t in r.topics],
        lambda v: _codes(NONE),
    ),
    ApiKey.FIND_COORDINATOR: Probe1(_find, _find_codes, lambda v: _codes(NONE)),
    ApiKey.FETCH: Probe1(_fetch, _per_partition, lambda v: _codes(NONE)),
    ApiKey.LIST_OFFSETS: Probe1(_list_offsets, _per_partition, lambda v: _codes(NONE)),
    ApiKey.OFFSET_COMMIT: Probe1(
        _offset_commit,
        lambda r, v: [p.error_code for t in r.topics for p in t.partitions],
        lambda v: _codes(NONE),
    ),
    ApiKey.OFFSET_FETCH: Probe1(
        _offset_fetch,
        _offset_fetch_codes,
        lambda v: _codes(NONE, NONE) if v >= 8 else _codes(NONE),  # v8+: the group's too
    ),
    ApiKey.JOIN_GROUP: Probe1(
        _join, lambda r, v: [r.error_code], lambda v: _codes(ErrorCode.UNKNOWN_MEMBER_ID)
    ),
    ApiKey.SYNC_GROUP: Probe1(
        _sync, lambda r, v: [r.error_code], lambda v: _codes(ErrorCode.UNKNOWN_MEMBER_ID)
    ),
    ApiKey.HEARTBEAT: Probe1(
        lambda s, v: HeartbeatRequest(group_id=s.group, generation_id=1, member_id=NOT_A_MEMBER),
        lambda r, v: [r.error_code],
        lambda v: _codes(ErrorCode.UNKNOWN_MEMBER_ID),
    ),
    ApiKey.LEAVE_GROUP: Probe1(_leave, _leave_codes, lambda v: _codes(ErrorCode.UNKNOWN_MEMBER_ID)),
    ApiKey.DESCRIBE_GROUPS: Probe1(
        lambda s, v: DescribeGroupsRequest(groups=[s.group]),
        lambda r, v: [g.error_code for g in r.groups],
        # KIP-1043: from v6 a group that does not exist is an error, before it was Dead.
        lambda v: _codes(ErrorCode.GROUP_ID_NOT_FOUND if v >= 6 else NONE),
    ),
    ApiKey.LIST_GROUPS: Probe1(
        lambda s, v: ListGroupsRequest(), lambda r, v: [r.error_code], lambda v: _codes(NONE)
    ),
    ApiKey.DELETE_GROUPS: Probe1(
        lambda s, v: DeleteGroupsRequest(groups_names=[s.group]),
        lambda r, v: [g.error_code for g in r.results],
        lambda v: _codes(ErrorCode.GROUP_ID_NOT_FOUND),
    ),
    ApiKey.OFFSET_DELETE: Probe1(
        lambda s, v: OffsetDeleteRequest(
            group_id=s.group,
            topics=[
                OffsetDeleteRequestTopic(
                    name=s.topic, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        lambda r, v: [r.error_code],
        lambda v: _codes(ErrorCode.GROUP_ID_NOT_FOUND),
    ),
    ApiKey.CREATE_TOPICS: Probe1(
        _create,
        lambda r, v: [t.error_code for t in r.topics],
        lambda v: _codes(ErrorCode.TOPIC_ALREADY_EXISTS),
    ),
    # KIP-848: a member heartbeating at an epoch in a group nobody joined.
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Probe1(
        lambda s, v: ConsumerGroupHeartbeatRequest(
            group_id=s.group, member_id=NOT_A_MEMBER, member_epoch=1
        ),
        lambda r, v: [r.error_code],
        lambda v: _codes(ErrorCode.GROUP_ID_NOT_FOUND),
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Probe1(
        lambda s, v: ConsumerGroupDescribeRequest(group_ids=[s.group]),
        lambda r, v: [g.error_code for g in r.groups],
        lambda v: _codes(ErrorCode.GROUP_ID_NOT_FOUND),
    ),
    # KIP-848 group configs: a group needs no members to be described (Kafka's values),
    # and a name Kafka's GroupConfig does not know is refused (only validated here).
    ApiKey.DESCRIBE_CONFIGS: Probe1(
        lambda s, v: DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=GROUP_RESOURCE,
                    resource_name=s.group,
                    configuration_keys=["consumer.session.timeout.ms"],
                )
            ]
        ),
        lambda r, v: [res.error_code for res in r.results],
        lambda v: _codes(ErrorCode.NONE),
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Probe1(
        lambda s, v: IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsResource(
                    resource_type=GROUP_RESOURCE,
                    resource_name=s.group,
                    configs=[
                        IncrementalAlterConfigsAlterableConfig(
                            name="consumer.no.such.config", config_operation=0, value="1"
                        )
                    ],
                )
            ],
            validate_only=True,
        ),
        lambda r, v: [res.error_code for res in r.responses],
        lambda v: _codes(ErrorCode.INVALID_CONFIG),
    ),
    # A broker that keeps records may take an empty batch or refuse it: only the layout
    # of the answer is checked.
    ApiKey.PRODUCE: Probe1(_produce, _per_partition, None),
}
#: Served but not in the matrix: SASL changes the connection's framing (the security
#: scenarios and tests cover it).
LEFT_OUT = {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


async def _subject(probe: Probe) -> Subject:
    topic_id: uuid.UUID | None = None
    if ApiKey.METADATA in probe.versions and probe.versions[ApiKey.METADATA][1] >= 10:
        version = min(probe.versions[ApiKey.METADATA][1], BY_KEY[ApiKey.METADATA].max_version)
        conn = await probe.connect()
        asked = MetadataRequest(topics=[MetadataRequestTopic(name=probe.target.topic)])
        try:
            meta = await probe.within(conn.send(asked, version), probe.target.reply_s, "Metadata")
        except DecodeError as exc:
            probe.fail("the Metadata answer does not decode", f"Metadata v{version}", "", str(exc))
        found = [t.topic_id for t in meta.topics if t.error_code == 0 and t.topic_id.int != 0]
        topic_id = found[0] if found else None
    return Subject(probe.target.topic, topic_id, probe.group_id("matrix"))


def _served(probe: Probe, key: ApiKey) -> range:
    low, high = probe.versions[key]
    ours = BY_KEY[key]
    return range(max(low, ours.min_version), min(high, ours.max_version) + 1)


@scenario(AREA, faults=("responses_one_version_down",))
async def testEveryAdvertisedVersionAnswersAsKafkaDoes(probe: Probe) -> None:
    subject = await _subject(probe)
    problems: list[str] = []
    sent = 0
    for key, api_probe in MATRIX.items():
        if key not in probe.versions:
            continue
        # A group of its own per API: what one API's requests do must not change another's.
        subject = replace(subject, group=probe.group_id(f"matrix-{key.name.lower()}"))
        conn = await probe.connect()
        for version in _served(probe, key):
            if not subject.names(key, version) and subject.topic_id is None:
                continue  # the target gives no topic ids to name the topic by
            request = api_probe.build(subject, version)
            label = f"{BY_KEY[key].name} v{version}"
            try:
                reply = await probe.within(conn.send(request, version), probe.target.reply_s, label)
            except Exception as exc:
                problems.append(f"{label}: {type(exc).__name__}: {exc}")
                conn = await probe.connect()
                continue
            sent += 1
            if api_probe.expected is None:
                continue
            got, want = api_probe.codes(reply, version), api_probe.expected(version)
            if got != want:
                shown = ", ".join(error_name(c) for c in got) or "no partition in the answer"
                problems.append(f"{label}: [{shown}], Kafka: [{', '.join(map(error_name, want))}]")
    if problems:
        probe.fail(
            f"{len(problems)} of {sent + len(problems)} versions answered unlike Kafka",
            "each advertised version with a small well-formed request",
            "every answer decodes at its version, with Kafka's error codes",
            "; ".join(problems),
        )


@scenario(AREA, faults=("topic_ids_unknown",), requires={ApiKey.METADATA: 10})
async def testTopicsNamedByIdAreFoundAndUnknownIdsAreUnknownTopicId(probe: Probe) -> None:
    subject = await _subject(probe)
    if subject.topic_id is None:
        probe.fail("Metadata gives the topic no id", "Metadata v10+", "a topic id", "none")
    assert subject.topic_id is not None
    stranger = Subject(subject.topic, uuid.uuid4(), subject.group)
    checked = 0
    for key, codes_of in (
        (ApiKey.FETCH, _per_partition),
        (ApiKey.OFFSET_COMMIT, MATRIX[ApiKey.OFFSET_COMMIT].codes),
        (ApiKey.OFFSET_FETCH, _offset_fetch_codes),
    ):
        if key not in probe.versions or probe.versions[key][1] < BY_ID_FROM[key]:
            continue
        version = min(probe.versions[key][1], BY_KEY[key].max_version)
        conn = await probe.connect()
        label = f"{BY_KEY[key].name} v{version} by topic id"
        build = MATRIX[key].build
        reply_s = probe.target.reply_s
        known = await probe.within(conn.send(build(subject, version), version), reply_s, label)
        probe.check(
            f"{label}: the topic's own id",
            [],
            [error_name(c) for c in codes_of(known, version) if c != NONE],
            label,
        )
        unknown = await probe.within(conn.send(build(stranger, version), version), reply_s, label)
        got = [c for c in codes_of(unknown, version) if c != NONE]
        probe.check(
            f"{label}: an id no topic has",
            [error_name(ErrorCode.UNKNOWN_TOPIC_ID)],
            [error_name(c) for c in got],
            label,
        )
        checked += 1
    if checked == 0:
        probe.fail("no API that names topics by id is advertised", "", "Fetch v13+", "none")
