"""ConsumerGroupHeartbeat checks as Kafka makes them (issue 30): regex matches filtered by
the member's DESCRIBE ACLs, a regex-only full request, static members, blank ids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.group.consumer.requests import ConsumerHeartbeatInput
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.settings.config import Settings
from coordinator.store import SecurityRows
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.apis.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from protocol.errors import ErrorCode
from tests.coordinator.group.consumer.harness import ConsumerHarness
from tests.coordinator.shell.pipeline import Pipeline
from tests.coordinator.shell.test_pipeline import SASL, answered, login

ALICE = ("alice", "alice-secret")


def _allow(resource: ResourceType, name: str, operation: Operation) -> AclBinding:
    return AclBinding(
        "User:alice", resource, name, PatternType.LITERAL, operation, Permission.ALLOW
    )


@pytest.fixture
def secured() -> Iterator[Pipeline]:
    p = Pipeline(
        Settings(security=SecuritySettings(sasl_enabled_mechanisms=("PLAIN",), acls_enabled=True))
    )
    for name in ("t", "tx", "secret"):
        p.node.catalog.create(name, 2)
    p.node.security.load(
        SecurityRows(
            credentials=(make_credential(*ALICE, "SCRAM-SHA-256"),),
            acls=(
                _allow(ResourceType.GROUP, "g", Operation.READ),
                _allow(ResourceType.TOPIC, "t", Operation.DESCRIBE),
                _allow(ResourceType.TOPIC, "tx", Operation.DESCRIBE),
            ),
        )
    )
    yield p
    p.node.regex_resolver.close()


def _heartbeat(p: Pipeline, conn: Any, req: ConsumerGroupHeartbeatRequest) -> Any:
    """A ConsumerGroupHeartbeat's answer: a join waits for its group's target, computed
    when the group's assignment timer fires (coalesce.py)."""
    sent = answered(p.send(conn, req, 1))
    p.advance(100)
    return sent.body if sent.body is not None else sent.later()


def _regex_join(secured: Pipeline, pattern: str) -> tuple[Any, Any]:
    """Alice's connection and the answer to member m-1 joining group g with ``pattern``."""
    conn = secured.connect(SASL)
    login(secured, conn, *ALICE)
    join = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m-1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=[],
        subscribed_topic_regex=pattern,
        topic_partitions=[],
    )
    return conn, _heartbeat(secured, conn, join)


@pytest.mark.integration  # starts the regex worker process
def test_a_regex_assigns_only_the_topics_the_member_may_describe(secured: Pipeline) -> None:
    _, r = _regex_join(secured, ".*")
    assert isinstance(r, ConsumerGroupHeartbeatResponse) and r.error_code == 0
    assert r.assignment is not None
    names = {secured.node.catalog.by_id(tp.topic_id).name for tp in r.assignment.topic_partitions}
    assert names == {"t", "tx"}  # not "secret"
    g = secured.node.groups.consumer_group("g")
    assert g.subscribed_topics() == {"t", "tx"}


def test_a_regex_only_full_heartbeat_gets_its_assignment_back() -> None:
    h = ConsumerHarness(topics={"orders-eu": 2})
    a = h.member("a", topics=[])
    a.regex = "orders-.*"
    a.join()
    full = ConsumerHeartbeatInput(
        "group",
        "a",
        a.epoch,
        rebalance_timeout_ms=30000,
        subscribed_topic_regex="orders-.*",
        owned=dict(a.owned),
    )
    r = h.send(full)
    assert r.error_code == 0
    assert r.assignment == {"orders-eu": frozenset({0, 1})}  # unchanged, and still sent


def test_a_static_member_rejoining_under_its_own_id_before_leaving_is_unreleased() -> None:
    h = ConsumerHarness()
    a = h.member("a", instance_id="i-1")
    assert a.join().error_code == 0
    r = a.join()  # epoch 0 again, same member id, no leave with epoch -2 first
    assert r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert r.error_message == (
        "Static member a with instance id i-1 cannot join the group because the instance id"
        " is owned by a member."
    )
    a.leave(epoch=-2)
    assert a.join().error_code == 0  # released: it takes its instance back


def test_a_dynamic_member_rejoining_with_an_instance_id_becomes_static() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    a.join()
    a.instance_id = "i-1"
    assert a.join().error_code == 0
    [d] = h.co.consumer_group_describe(["group"])
    assert d.members[0].instance_id == "i-1"
    other = h.member("b", instance_id="i-1")
    assert other.join().error_code == ErrorCode.UNRELEASED_INSTANCE_ID


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("group_id", "   ", "GroupId can't be empty."),
        ("member_id", "\t", "MemberId can't be empty."),
        ("instance_id", " \n", "InstanceId can't be empty."),
        ("rack_id", " ", "RackId can't be empty."),
    ],
)
def test_whitespace_only_ids_are_invalid(field: str, value: str, message: str) -> None:
    h = ConsumerHarness()
    fields: dict[str, object] = {
        "group_id": "group",
        "member_id": "m",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["orders"],
        "owned": {},
    }
    fields[field] = value
    r = h.send(ConsumerHeartbeatInput(**fields))  # type: ignore[arg-type]
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert not h.co.groups


def test_group_configs_need_describe_configs_and_alter_configs(secured: Pipeline) -> None:
    conn = secured.connect(SASL)
    login(secured, conn, *ALICE)
    resource = DescribeConfigsResource(resource_type=32, resource_name="g")
    describe = DescribeConfigsRequest(resources=[resource])
    change = IncrementalAlterConfigsAlterableConfig(
        name="consumer.session.timeout.ms", config_operation=0, value="50000"
    )
    alter = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsResource(resource_type=32, resource_name="g", configs=[change])
        ],
        validate_only=False,
    )
    [refused] = answered(secured.send(conn, describe, 4)).body.results
    assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED  # READ is not enough
    [refused_alter] = answered(secured.send(conn, alter, 1)).body.responses
    assert refused_alter.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED

    secured.node.security.load(
        SecurityRows(
            credentials=(make_credential(*ALICE, "SCRAM-SHA-256"),),
            acls=(_allow(ResourceType.GROUP, "g", Operation.ALTER_CONFIGS),),
        )
    )
    [altered] = answered(secured.send(conn, alter, 1)).body.responses
    assert altered.error_code == 0
    [described] = answered(secured.send(conn, describe, 4)).body.results  # implied
    values = {c.name: (c.value, c.config_source) for c in described.configs}
    assert values["consumer.session.timeout.ms"] == ("50000", 8)


@pytest.mark.integration  # starts the regex worker process
def test_regex_matches_follow_acl_changes_within_the_refresh_interval(secured: Pipeline) -> None:
    """Kafka resolves a group's regexes again every group.consumer.regex.refresh.interval.ms
    (10 minutes): a topic the member may no longer describe leaves its subscription."""
    conn, r = _regex_join(secured, "t.*")
    assert r.error_code == 0
    g = secured.node.groups.consumer_group("g")
    assert g is not None and g.subscribed_topics() == {"t", "tx"}
    secured.node.security.load(
        SecurityRows(
            credentials=(make_credential(*ALICE, "SCRAM-SHA-256"),),
            acls=(
                _allow(ResourceType.GROUP, "g", Operation.READ),
                _allow(ResourceType.TOPIC, "t", Operation.DESCRIBE),
            ),
        )
    )
    beat = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=r.member_epoch)
    secured.clock.advance(60_000)
    assert _heartbeat(secured, conn, beat).error_code == 0
    assert g.subscribed_topics() == {"t", "tx"}  # within the interval: as resolved
    secured.clock.advance(600_000)
    assert _heartbeat(secured, conn, beat).error_code == 0
    assert g.subscribed_topics() == {"t"}
