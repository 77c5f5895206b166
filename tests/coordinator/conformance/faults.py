"""Deliberately broken behaviours of an in-process daemon. Each conformance scenario names
the faults that must make it fail; the test next to this module checks that they do.

A fault goes in through a seam the daemon offers (``seams.py``): the state machine's public
calls (the request in, the results out, a timer that never fires), the wire (a proxy in
front of the daemon) or its settings. None patches a module, so refactoring the group
model leaves them standing. Nothing here can reach production code paths: a fault exists
only in the daemon one test starts."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from coordinator.group.consumer.requests import ConsumerHeartbeatInput, ConsumerHeartbeatResult
from coordinator.group.deadlines import heartbeat_key, join_key, sync_key
from coordinator.group.effects import Effects
from coordinator.group.requests import (
    HeartbeatInput,
    JoinGroupInput,
    LeaveGroupInput,
    LeavingMember,
    OffsetCommitInput,
    SyncGroupInput,
)
from coordinator.group.results import (
    DeleteGroupsResult,
    DescribedGroup,
    GroupError,
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    ListedGroup,
    MemberError,
    OffsetCommitResult,
    OffsetFetchResult,
    PartitionError,
    PartitionOffset,
    SyncGroupResult,
    TopicErrors,
    TopicOffsets,
)
from coordinator.settings.config import Settings
from protocol.apis import API_VERSIONS_KEY, BY_KEY, Api, ApiKey
from protocol.apis.api_versions import ApiVersionsResponse
from protocol.apis.consumer_group_describe import ConsumerGroupDescribeResponse
from protocol.apis.delete_groups import DeleteGroupsResponse
from protocol.apis.find_coordinator import FindCoordinatorResponse
from protocol.errors import ErrorCode
from protocol.frames import decode_request, encode_request
from protocol.schema import Struct

from .seams import (
    CLOSE,
    Broken,
    Close,
    DeleteGroups,
    DescribeGroups,
    Fault,
    FetchOffsets,
    ListGroups,
    Proceed,
    merged,
)

FAULTS: dict[str, type[Fault]] = {}

UNKNOWN = ErrorCode.UNKNOWN_MEMBER_ID
REBALANCING = ErrorCode.REBALANCE_IN_PROGRESS
FENCED = ErrorCode.FENCED_INSTANCE_ID
NONE = ErrorCode.NONE
STALE = ErrorCode.STALE_MEMBER_EPOCH
STABLE, COMPLETING, PREPARING = "Stable", "CompletingRebalance", "PreparingRebalance"


def fault(cls: type[Fault]) -> type[Fault]:
    FAULTS[cls.__name__] = cls
    return cls


def replace(value: Any, **changes: Any) -> Any:
    return dataclasses.replace(value, **changes)


def map_errors(result: Any, f: Any) -> Any:
    """``result`` with every error code (top level, per member, per partition) through
    ``f``; results without error codes as they are."""
    if isinstance(result, HeartbeatResult | JoinGroupResult | SyncGroupResult):
        return replace(result, error_code=f(result.error_code))
    if isinstance(result, LeaveGroupResult):
        members = [replace(m, error_code=f(m.error_code)) for m in result.members]
        return LeaveGroupResult(f(result.error_code), members)
    if isinstance(result, OffsetCommitResult):
        return OffsetCommitResult(
            [
                TopicErrors(
                    t.topic, [PartitionError(p.partition, f(p.error_code)) for p in t.partitions]
                )
                for t in result.topics
            ]
        )
    return result


def timer_of(co: Broken, key: str) -> tuple[str, str] | None:
    """(kind, group) of a classic group's timer key: join, sync or heartbeat."""
    for group_id in co.groups:
        if key == join_key(group_id):
            return "join", group_id
        if key == sync_key(group_id):
            return "sync", group_id
        if key.startswith(heartbeat_key(group_id, "")):
            return "heartbeat", group_id
    return None


def member_ids(co: Broken, group_id: str) -> list[str]:
    return [m.member_id for m in co.described(group_id).members]


# -- wire layer ------------------------------------------------------------------------------


@fault
class api_versions_no_fallback(Fault):
    """An ApiVersions request above our versions closes the connection (no KIP-511 v0
    answer)."""

    wire = True

    def client_frame(self, api_key: int, version: int, frame: bytes) -> bytes | Close | None:
        api = BY_KEY.get(api_key)  # type: ignore[call-overload]
        if api_key == API_VERSIONS_KEY and api is not None and version > api.max_version:
            return CLOSE
        return frame


@fault
class unsupported_request_kept_open(Fault):
    """Requests of unknown APIs or versions are ignored, their connection kept open."""

    wire = True

    def client_frame(self, api_key: int, version: int, frame: bytes) -> bytes | Close | None:
        api = BY_KEY.get(api_key)  # type: ignore[call-overload]
        if api_key != API_VERSIONS_KEY and (api is None or not api.supports(version)):
            return None
        return frame


# -- JoinGroup -------------------------------------------------------------------------------


@fault
class no_member_id_required(Fault):
    """JoinGroup v4+ from a new member is served as v3 was: no MEMBER_ID_REQUIRED."""

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput) and not req.member_id and req.api_version >= 4:
            return replace(req, api_version=3)
        return req


@fault
class unknown_member_joins_new_group(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput) and req.group_id not in co.groups:
            return replace(req, member_id="")
        return req


@fault
class latest_joiner_leads(Fault):
    """Every join answer names the newest member the leader."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and result.error_code == NONE:
            assert isinstance(req, JoinGroupInput)
            members = member_ids(co, req.group_id)
            if members:
                return replace(result, leader=members[-1])
        return result


@fault
class no_leader_reelection(Fault):
    """A leader that left stays leader in the join answers that follow."""

    def __init__(self) -> None:
        self.departed: dict[str, str] = {}

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, LeaveGroupInput):
            leader = co.told.leader.get(req.group_id)
            if leader in {m.member_id for m in req.members}:
                self.departed[req.group_id] = leader  # type: ignore[assignment]
        return req

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and isinstance(req, JoinGroupInput):
            departed = self.departed.get(req.group_id)
            if departed is not None and result.error_code == NONE:
                return replace(result, leader=departed, members=[])
        return result


@fault
class no_rebalance_on_join(Fault):
    """A JoinGroup to a group that has a generation is answered at once with that
    generation: no rebalance, and a newcomer is not even added."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, JoinGroupInput) and co.state(req.group_id) in (STABLE, COMPLETING):
            group = req.group_id
            described = co.described(group)
            member = req.member_id or f"{req.client_id}-{uuid.uuid4()}"
            return co.answer(
                token,
                JoinGroupResult(
                    NONE,
                    co.told.generation.get(group, 1),
                    described.protocol_type,
                    described.protocol_data,
                    co.told.leader.get(group, ""),
                    member,
                ),
            )
        return proceed(req)


@fault
class generation_not_incremented(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and result.error_code == NONE:
            return replace(result, generation_id=result.generation_id - 1)
        return result


@fault
class ignore_protocol_mismatch(Fault):
    """A joiner whose protocols the group does not support is let in (told NONE)."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        inconsistent = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if isinstance(result, JoinGroupResult) and result.error_code == inconsistent:
            assert isinstance(req, JoinGroupInput)
            generation = co.told.generation.get(req.group_id, 1)
            return replace(result, error_code=NONE, generation_id=generation)
        return result


@fault
class leader_protocol_wins(Fault):
    """The protocol chosen is the leader's first, not the members' vote."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and result.error_code == NONE:
            protocols = co.told.protocols.get(result.leader)
            if result.member_id == result.leader and isinstance(req, JoinGroupInput):
                protocols = req.protocols
            if protocols:
                return replace(result, protocol_name=protocols[0][0])
        return result


@fault
class no_session_timeout_check(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput):
            low, high = co.config.min_session_timeout_ms, co.config.max_session_timeout_ms
            return replace(req, session_timeout_ms=min(max(req.session_timeout_ms, low), high))
        return req


@fault
class rebalance_on_unchanged_rejoin(Fault):
    """A member rejoining with the same metadata is taken for a changed one."""

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput) and req.member_id in co.told.protocols:
            changed = [(name, meta + b"\x00") for name, meta in req.protocols]
            return replace(req, protocols=changed)
        return req


@fault
class ignore_metadata_change(Fault):
    """A member rejoining with new metadata is taken for an unchanged one."""

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput) and req.member_id in co.told.protocols:
            return replace(req, protocols=co.told.protocols[req.member_id])
        return req


# -- SyncGroup -------------------------------------------------------------------------------


@fault
class drop_assignments(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, SyncGroupInput):
            return replace(req, assignments=[])
        return req


@fault
class sync_answers_without_waiting(Fault):
    """A follower's SyncGroup is answered at once, with no assignment."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if (
            isinstance(req, SyncGroupInput)
            and co.state(req.group_id) == COMPLETING
            and req.member_id in member_ids(co, req.group_id)
            and co.told.leader.get(req.group_id) != req.member_id
        ):
            described = co.described(req.group_id)
            result = SyncGroupResult(NONE, described.protocol_type, described.protocol_data, b"")
            return co.answer(token, result)
        return proceed(req)


@fault
class sync_skips_protocol_check(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, SyncGroupInput):
            return replace(req, protocol_type=None, protocol_name=None)
        return req


@fault
class no_sync_timeout(Fault):
    def fires(self, co: Broken, key: str) -> bool:
        timer = timer_of(co, key)
        return timer is None or timer[0] != "sync"


# -- member and generation checks (Heartbeat, SyncGroup, LeaveGroup, OffsetCommit) ----------


@fault
class unknown_member_answered_ok(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult):
            return result
        return map_errors(result, lambda code: NONE if code == UNKNOWN else code)


@fault
class skip_generation_check(Fault):
    """Heartbeat, SyncGroup and OffsetCommit are taken to name the current generation."""

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, HeartbeatInput | SyncGroupInput | OffsetCommitInput):
            current = co.told.generation.get(req.group_id)
            if current is not None and req.generation_id >= 0:
                return replace(req, generation_id=current)
        return req


@fault
class heartbeat_ignores_rebalance(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, HeartbeatResult) and result.error_code == REBALANCING:
            return HeartbeatResult(NONE)
        return result


@fault
class heartbeat_rejects_completing_rebalance(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, HeartbeatResult) and result.error_code == NONE:
            assert isinstance(req, HeartbeatInput)
            if co.state(req.group_id) == COMPLETING:
                return HeartbeatResult(REBALANCING)
        return result


@fault
class commit_ignores_rebalance(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, OffsetCommitResult):
            return map_errors(result, lambda code: NONE if code == REBALANCING else code)
        return result


# -- liveness --------------------------------------------------------------------------------


@fault
class no_session_expiry(Fault):
    def fires(self, co: Broken, key: str) -> bool:
        timer = timer_of(co, key)
        return timer is None or timer[0] != "heartbeat"


@fault
class heartbeat_does_not_refresh_session(Fault):
    """A heartbeat of a member of a Stable group is answered, the session left as it was."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if (
            isinstance(req, HeartbeatInput)
            and co.state(req.group_id) == STABLE
            and req.member_id in member_ids(co, req.group_id)
            and req.generation_id == co.told.generation.get(req.group_id)
        ):
            return co.answer(token, HeartbeatResult(NONE))
        return proceed(req)


@fault
class no_rebalance_timeout(Fault):
    """A rebalance waits for every member however long it takes (the initial delay of a
    group without a generation still ends)."""

    def fires(self, co: Broken, key: str) -> bool:
        timer = timer_of(co, key)
        if timer is None or timer[0] != "join":
            return True
        return timer[1] not in co.told.generation


# -- static membership -----------------------------------------------------------------------


@fault
class static_member_id_required(Fault):
    """A new static member is served as a dynamic one."""

    def request(self, co: Broken, req: Any) -> Any:
        if (
            isinstance(req, JoinGroupInput)
            and req.group_instance_id is not None
            and (req.group_id, req.group_instance_id) not in co.told.member_of_instance
        ):
            return replace(req, group_instance_id=None)
        return req


@fault
class static_replacement_rebalances(Fault):
    """A static member coming back under a new member id is removed first (as if it had
    left), and joins as a newcomer: the group rebalances."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, JoinGroupInput) and req.group_instance_id is not None:
            old = co.told.member_of_instance.get((req.group_id, req.group_instance_id))
            if old is not None and old != req.member_id and old in member_ids(co, req.group_id):
                leave = LeaveGroupInput(req.group_id, [LeavingMember(old, req.group_instance_id)])
                left = co.also(co.leave_group, leave, co.now)
                joined = proceed(req)
                return merged(left, joined)
        return proceed(req)


@fault
class no_instance_fencing(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        return map_errors(result, lambda code: UNKNOWN if code == FENCED else code)


@fault
class skip_assignment_ignored(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and result.skip_assignment:
            return replace(result, skip_assignment=False)
        return result


@fault
class static_members_dropped_at_completion(Fault):
    """When a rebalance times out, the static members that did not rejoin are removed
    (Kafka keeps them)."""

    def __init__(self) -> None:
        self.rejoined: dict[str, set[str]] = {}

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, JoinGroupInput):
            self.rejoined.setdefault(req.group_id, set()).add(req.member_id)
        return req

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, JoinGroupResult) and isinstance(req, JoinGroupInput):
            self.rejoined.pop(req.group_id, None)  # a join phase ended
        return result

    def fires(self, co: Broken, key: str) -> bool:
        timer = timer_of(co, key)
        if timer is not None and timer[0] == "join" and co.state(timer[1]) == PREPARING:
            group = timer[1]
            rejoined = self.rejoined.get(group, set())
            gone = [
                LeavingMember(m.member_id, m.group_instance_id)
                for m in co.described(group).members
                if m.group_instance_id is not None and m.member_id not in rejoined
            ]
            if gone:
                co.pending.append(co.also(co.leave_group, LeaveGroupInput(group, gone), co.now))
        return True


# -- LeaveGroup ------------------------------------------------------------------------------


@fault
class leave_by_instance_ignored(Fault):
    """Members named by instance id alone are answered UNKNOWN_MEMBER_ID, and stay."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, LeaveGroupInput):
            by_instance = [m for m in req.members if not m.member_id]
            if by_instance:
                named = [m for m in req.members if m.member_id]
                effects = proceed(replace(req, members=named)) if named else None
                errors = [MemberError("", m.group_instance_id, UNKNOWN) for m in by_instance]
                if effects is None:
                    return co.answer(token, LeaveGroupResult(NONE, errors))
                effects.replies = [
                    (t, LeaveGroupResult(r.error_code, [*r.members, *errors]) if t is token else r)
                    for t, r in effects.replies
                ]
                return effects
        return proceed(req)


@fault
class batch_leave_first_only(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, LeaveGroupInput):
            return replace(req, members=req.members[:1])
        return req


@fault
class no_rebalance_on_leave(Fault):
    """Leaves are acknowledged and sessions expire without anything happening: the group
    goes on as it was."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, LeaveGroupInput) and req.group_id in co.groups:
            known = set(member_ids(co, req.group_id))
            if all(m.member_id in known for m in req.members):
                members = [MemberError(m.member_id, m.group_instance_id, NONE) for m in req.members]
                return co.answer(token, LeaveGroupResult(NONE, members))
        return proceed(req)

    def fires(self, co: Broken, key: str) -> bool:
        timer = timer_of(co, key)
        return timer is None or timer[0] != "heartbeat"


@fault
class no_max_size(Fault):
    """The daemon runs without a group size limit (the runner expects one)."""

    def settings(self, settings: Settings) -> Settings:
        group = replace(settings.group, max_size=2**31 - 1)
        return replace(settings, group=group)


# -- offsets and admin -----------------------------------------------------------------------


@fault
class fetch_unknown_as_zero(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(req, FetchOffsets) and isinstance(result, OffsetFetchResult):
            topics = [
                TopicOffsets(
                    t.topic,
                    [
                        PartitionOffset(
                            p.partition, max(p.offset, 0), p.leader_epoch, p.metadata, p.error_code
                        )
                        for p in t.partitions
                    ],
                )
                for t in result.topics
            ]
            return OffsetFetchResult(result.error_code, topics)
        return result


@fault
class metadata_size_unchecked(Fault):
    """The daemon runs without a limit on commit metadata (the runner expects Kafka's)."""

    def settings(self, settings: Settings) -> Settings:
        group = replace(settings.group, offset_metadata_max_bytes=2**31 - 1)
        return replace(settings, group=group)


@fault
class describe_hides_members(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(req, DescribeGroups):
            groups: list[DescribedGroup] = result
            return [replace(d, members=[]) for d in groups]
        return result


@fault
class list_omits_empty_groups(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(req, ListGroups):
            rows: list[ListedGroup] = result
            return [r for r in rows if r.group_state != "Empty"]
        return result


@fault
class delete_non_empty_groups(Fault):
    """Reports success for groups it must refuse (without touching them)."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, DeleteGroupsResult):
            nonempty = ErrorCode.NON_EMPTY_GROUP
            return DeleteGroupsResult(
                [
                    GroupError(g.group_id, NONE if g.error_code == nonempty else g.error_code)
                    for g in result.groups
                ]
            )
        return result


@fault
class delete_groups_says_nothing(Fault):
    """DeleteGroups v3 answered without the ErrorMessage of a group it refused."""

    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        if not isinstance(body, DeleteGroupsResponse):
            return None
        for r in body.results:
            r.error_message = None
        return version, body


@fault
class delete_reports_success_without_deleting(Fault):
    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, DeleteGroups):
            return co.answer(
                token, DeleteGroupsResult([GroupError(g, NONE) for g in req.group_ids])
            )
        return proceed(req)


# -- coordinators (a cluster, each node behind a proxy it advertises) ---------------------------


class _FindCoordinator(Fault):
    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        if isinstance(body, FindCoordinatorResponse) and body.error_code == NONE:
            return version, self.found(body)
        return None

    def found(self, body: FindCoordinatorResponse) -> FindCoordinatorResponse:
        return body


@fault
class find_coordinator_unknown_node(_FindCoordinator):
    def found(self, body: FindCoordinatorResponse) -> FindCoordinatorResponse:
        body.node_id += 1000
        for c in body.coordinators or []:
            c.node_id += 1000
        return body


@fault
class every_node_names_itself(_FindCoordinator):
    """Each node answers FindCoordinator with itself (``node``: set per proxy)."""

    node: tuple[int, str, int] = (-1, "", -1)

    def found(self, body: FindCoordinatorResponse) -> FindCoordinatorResponse:
        body.node_id, body.host, body.port = self.node
        for c in body.coordinators or []:
            c.node_id, c.host, c.port = self.node
        return body


@fault
class every_node_coordinates(Fault):
    """A node that does not own a group answers its requests as if it did."""

    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        group_apis = (ApiKey.HEARTBEAT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP)
        refused = getattr(body, "error_code", NONE) == ErrorCode.NOT_COORDINATOR
        if api.key in group_apis and refused:
            body.error_code = NONE  # type: ignore[attr-defined]
            return version, body
        return None


@fault
class api_versions_cluster_unchecked(Fault):
    """ApiVersions v5's cluster id and node id are read and ignored (KIP-1242 unchecked)."""

    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        if isinstance(body, ApiVersionsResponse) and body.error_code:
            body.error_code = NONE
            return version, body
        return None


# -- version matrix ---------------------------------------------------------------------------


@fault
class responses_one_version_down(Fault):
    """Answers an older version in the layout of the one below it (the newest versions,
    which clients and the runner speak, and ApiVersions are answered right)."""

    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        if api.key != API_VERSIONS_KEY and api.min_version < version < api.max_version:
            return version - 1, body
        return None


@fault
class topic_ids_unknown(Fault):
    """The daemon finds no topic by its id: every topic id a request names is a stranger."""

    wire = True

    def client_frame(self, api_key: int, version: int, frame: bytes) -> bytes | Close | None:
        if api_key not in (ApiKey.FETCH, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH):
            return frame
        request = decode_request(frame)
        if not _forget_topic_ids(request.body):
            return frame
        header = request.header
        return encode_request(request.body, version, header.correlation_id, header.client_id)[4:]


def _forget_topic_ids(value: Any) -> bool:
    changed = False
    if isinstance(value, list):
        for item in value:
            changed |= _forget_topic_ids(item)
    elif isinstance(value, Struct):
        for f in dataclasses.fields(value):
            inner = getattr(value, f.name)
            if f.name == "topic_id" and isinstance(inner, uuid.UUID) and inner.int:
                setattr(value, f.name, uuid.uuid4())
                changed = True
            else:
                changed |= _forget_topic_ids(inner)
    return changed


# -- KIP-848 consumer groups ------------------------------------------------------------------


@fault
class kip848_no_assignment(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, ConsumerHeartbeatResult):
            return replace(result, assignment=None)
        return result


@fault
class kip848_assign_before_revoke(Fault):
    """A member is given every partition of its topics at once, whoever still owns them."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, ConsumerHeartbeatResult) and result.error_code == NONE:
            member = result.member_id or ""
            topics = co.told.topics.get(member, [])
            if result.member_epoch > 0 and topics:
                everything = {t: frozenset(range(co.topic_partitions(t))) for t in topics}
                return replace(result, assignment=everything)
        return result


@fault
class kip848_skip_epoch_check(Fault):
    """A heartbeat is taken to name the member's current epoch, whatever it says."""

    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, ConsumerHeartbeatInput) and req.member_epoch > 0:
            current = co.told.epoch.get(req.member_id)
            if current is not None:
                return replace(req, member_epoch=current)
        return req


@fault
class kip848_unknown_member_accepted(Fault):
    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(result, ConsumerHeartbeatResult) and result.error_code == UNKNOWN:
            return replace(result, error_code=NONE, error_message=None)
        return result


@fault
class kip848_commit_skips_epoch(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, OffsetCommitInput):
            current = co.told.epoch.get(req.member_id)
            if current is not None:
                return replace(req, generation_id=current)
        return req


@fault
class kip848_commit_refuses_older_epoch(Fault):
    """Kafka 4.2's rule: a commit at any epoch but the member's is refused (no KIP-1251)."""

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if isinstance(req, OffsetCommitInput) and isinstance(result, OffsetCommitResult):
            current = co.told.epoch.get(req.member_id)
            if current is not None and 0 <= req.generation_id < current:
                return OffsetCommitResult(
                    [
                        TopicErrors(
                            t.topic, [PartitionError(p.partition, STALE) for p in t.partitions]
                        )
                        for t in result.topics
                    ]
                )
        return result


@fault
class kip848_describe_hides_revoking(Fault):
    """Kafka 4.2's ConsumerGroupDescribe: a member's partitions being revoked left out
    (what it keeps is what its target and its assignment share)."""

    wire = True

    def response(self, api: Api, version: int, body: Struct) -> tuple[int, Struct] | None:
        if not isinstance(body, ConsumerGroupDescribeResponse):
            return None
        for g in body.groups:
            for m in g.members:
                target = {
                    (tp.topic_id, p)
                    for tp in m.target_assignment.topic_partitions
                    for p in tp.partitions
                }
                for tp in m.assignment.topic_partitions:
                    tp.partitions = [p for p in tp.partitions if (tp.topic_id, p) in target]
        return version, body


@fault
class kip848_leave_keeps_partitions(Fault):
    """A leave answered, but the member stays with its partitions."""

    def call(self, co: Broken, token: object, req: Any, proceed: Proceed) -> Effects[Any]:
        if isinstance(req, ConsumerHeartbeatInput) and req.member_epoch == -1:
            result = ConsumerHeartbeatResult(NONE, member_id=req.member_id, member_epoch=-1)
            return co.answer(token, result)
        return proceed(req)


@fault
class kip848_static_assignment_lost(Fault):
    """A static member coming back under a new member id is told it owns nothing: the
    assignment its instance had is lost."""

    def __init__(self) -> None:
        self.instances: dict[tuple[str, str], str] = {}  # (group, instance) -> first member

    def returning(self, co: Broken, req: ConsumerHeartbeatInput) -> bool:
        assert req.instance_id is not None
        first = self.instances.setdefault((req.group_id, req.instance_id), req.member_id)
        return first != req.member_id

    def result(self, co: Broken, req: Any, result: Any) -> Any:
        if (
            isinstance(req, ConsumerHeartbeatInput)
            and isinstance(result, ConsumerHeartbeatResult)
            and req.member_epoch == 0
            and req.instance_id is not None
            and result.error_code == NONE
            and self.returning(co, req)
        ):
            return replace(result, assignment={})
        return result


@fault
class kip848_regex_matches_nothing(Fault):
    def request(self, co: Broken, req: Any) -> Any:
        if isinstance(req, ConsumerHeartbeatInput) and req.subscribed_topic_regex:
            return replace(req, subscribed_topic_regex=r"\b\B")
        return req
