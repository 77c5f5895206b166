"""A consumer group's own session timeout and heartbeat interval (Kafka's dynamic group
configs): Kafka's rules, applied to the group's members, stored and loaded again."""

from __future__ import annotations

import pytest

from coordinator.group.config import GroupConfig
from coordinator.group.consumer.config import ConsumerGroupConfig
from coordinator.group.consumer.group_configs import (
    ASSIGNMENT_INTERVAL,
    HEARTBEAT_INTERVAL,
    SESSION_TIMEOUT,
    ConfigError,
    Op,
    Source,
)
from coordinator.group.deadlines import consumer_session_key
from coordinator.group.events import GroupConfigCapped
from protocol.errors import ErrorCode

from .harness import ConsumerHarness

Change = tuple[str, int, str | None]


def alter(
    h: ConsumerHarness, changes: list[Change], group: str = "group", validate_only: bool = False
) -> ConfigError | None:
    token = h._token()
    h.apply(h.co.alter_group_configs(token, [(group, changes)], validate_only, h.now))
    [result] = h.replies[token]
    assert result is None or isinstance(result, ConfigError)
    return result


def values(h: ConsumerHarness, group: str = "group") -> dict[str, tuple[str, Source]]:
    return {e.name: (e.value, e.source) for e in h.co.describe_group_configs(group, None)}


def test_a_group_without_configs_is_described_with_the_daemons() -> None:
    h = ConsumerHarness()
    assert values(h) == {
        # The harness sets the daemon's interval to 0 (Kafka 4.3's default is 1000).
        ASSIGNMENT_INTERVAL: ("0", Source.STATIC_BROKER_CONFIG),
        HEARTBEAT_INTERVAL: ("5000", Source.DEFAULT_CONFIG),
        SESSION_TIMEOUT: ("45000", Source.DEFAULT_CONFIG),
    }


def test_the_groups_values_apply_to_its_members_from_their_next_heartbeat() -> None:
    h = ConsumerHarness()
    a = h.member("a")
    assert a.join().heartbeat_interval_ms == 5000
    assert (
        alter(h, [(SESSION_TIMEOUT, Op.SET, "50000"), (HEARTBEAT_INTERVAL, Op.SET, "7000")]) is None
    )
    assert values(h)[SESSION_TIMEOUT] == ("50000", Source.GROUP_CONFIG)
    assert a.beat().heartbeat_interval_ms == 7000
    deadline, _ = h.timers[consumer_session_key("group", "a")]
    assert deadline == h.now + 50000
    other = h.member("b", group="other")
    assert other.join().heartbeat_interval_ms == 5000  # other groups keep the daemon's
    assert alter(h, [(HEARTBEAT_INTERVAL, Op.DELETE, None)]) is None
    assert a.beat().heartbeat_interval_ms == 5000


def test_configs_are_stored_and_loaded_again() -> None:
    h = ConsumerHarness()
    assert alter(h, [(SESSION_TIMEOUT, Op.SET, "55000")]) is None
    again = ConsumerHarness()
    again.apply(again.co.load(h.records, again.now))
    assert values(again)[SESSION_TIMEOUT] == ("55000", Source.GROUP_CONFIG)
    assert alter(again, [(SESSION_TIMEOUT, Op.DELETE, None)]) is None
    third = ConsumerHarness()
    third.apply(third.co.load(h.records + again.records, third.now))
    assert values(third)[SESSION_TIMEOUT] == ("45000", Source.DEFAULT_CONFIG)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([("consumer.foo", Op.SET, "1")], "Unknown group config name: consumer.foo"),
        (
            [("share.session.timeout.ms", Op.SET, "50000")],
            "Group config share.session.timeout.ms is for share or streams groups, not served"
            " here.",
        ),
        (
            [(SESSION_TIMEOUT, Op.APPEND, "1")],
            f"Config value append is not allowed for config key: {SESSION_TIMEOUT}",
        ),
        (
            [(SESSION_TIMEOUT, Op.SET, "soon")],
            f"Invalid value soon for configuration {SESSION_TIMEOUT}: Not a number of type INT",
        ),
        (
            [(SESSION_TIMEOUT, Op.SET, "0")],
            f"Invalid value 0 for configuration {SESSION_TIMEOUT}: Value must be at least 1",
        ),
        (
            [(SESSION_TIMEOUT, Op.SET, "60001")],
            f"{SESSION_TIMEOUT} must be less than or equal to"
            " group.consumer.max.session.timeout.ms",
        ),
        (
            [(HEARTBEAT_INTERVAL, Op.SET, "4999")],
            f"{HEARTBEAT_INTERVAL} must be greater than or equal to"
            " group.consumer.min.heartbeat.interval.ms",
        ),
        (
            [(SESSION_TIMEOUT, Op.SET, "45000"), (HEARTBEAT_INTERVAL, Op.SET, "15000")],
            None,
        ),
    ],
)
def test_kafkas_rules_refuse_the_whole_resource(changes: list[Change], message: str | None) -> None:
    h = ConsumerHarness()
    result = alter(h, changes)
    if message is None:
        assert result is None
        return
    assert result == ConfigError(ErrorCode.INVALID_CONFIG, message)
    assert values(h)[SESSION_TIMEOUT] == ("45000", Source.DEFAULT_CONFIG)
    assert not h.records


def test_the_session_must_stay_longer_than_the_interval() -> None:
    consumer = ConsumerGroupConfig(min_session_timeout_ms=1000, min_heartbeat_interval_ms=100)
    h = ConsumerHarness(config=GroupConfig(consumer=consumer))
    result = alter(h, [(SESSION_TIMEOUT, Op.SET, "4000")])  # the interval is still 5000
    assert result == ConfigError(
        ErrorCode.INVALID_CONFIG, f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}"
    )


def test_duplicate_keys_and_validate_only() -> None:
    h = ConsumerHarness()
    twice = [(SESSION_TIMEOUT, Op.SET, "50000"), (SESSION_TIMEOUT, Op.DELETE, None)]
    assert alter(h, twice) == ConfigError(
        ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    )
    assert alter(h, [(SESSION_TIMEOUT, Op.SET, "50000")], validate_only=True) is None
    assert values(h)[SESSION_TIMEOUT] == ("45000", Source.DEFAULT_CONFIG)
    assert not h.records


def test_a_groups_own_assignment_interval_coalesces_its_heartbeats() -> None:
    """KIP-1263 (Kafka 4.3): consumer.assignment.interval.ms for one group, 0-15000."""
    h = ConsumerHarness()  # the daemon's interval: 0
    a = h.member("a")
    a.join()
    assert alter(h, [(ASSIGNMENT_INTERVAL, Op.SET, "1000")]) is None
    assert values(h)[ASSIGNMENT_INTERVAL] == ("1000", Source.GROUP_CONFIG)
    b = h.member("b")
    held = h.send_held(b.request(full=True))
    assert held not in h.replies  # waits for the group's quiet period, not the turn's end
    h.advance(100)
    assert b.answered(h.replies[held]).error_code == 0
    other = h.member("c", group="other")
    assert other.join().error_code == 0  # answered at once: the daemon's interval
    for bad in ("-1", "15001"):
        refused = alter(h, [(ASSIGNMENT_INTERVAL, Op.SET, bad)])
        assert refused is not None and refused.code == ErrorCode.INVALID_CONFIG
    assert alter(h, [(ASSIGNMENT_INTERVAL, Op.SET, "0")]) is None


def test_a_stored_value_outside_narrowed_bounds_is_applied_capped() -> None:
    """KAFKA-20162 (Kafka 4.3): the daemon's bounds narrowed since the value was set."""
    h = ConsumerHarness()
    assert alter(h, [(SESSION_TIMEOUT, Op.SET, "60000")]) is None
    consumer = ConsumerGroupConfig(max_session_timeout_ms=50000, assignment_interval_ms=0)
    again = ConsumerHarness(config=GroupConfig(consumer=consumer))
    again.apply(again.co.load(h.records, again.now))
    assert values(again)[SESSION_TIMEOUT] == ("60000", Source.GROUP_CONFIG)  # as stored
    # The operator is told, once, as the group is loaded (Kafka logs a warning).
    capped = [e for e in again.events if isinstance(e, GroupConfigCapped)]
    assert capped == [GroupConfigCapped("group", SESSION_TIMEOUT, 60000, 50000, 45000, 50000)]
    again.member("a").join()
    deadline, _ = again.timers[consumer_session_key("group", "a")]
    assert deadline == again.now + 50000
    assert [e for e in again.events if isinstance(e, GroupConfigCapped)] == capped


def test_a_stored_value_within_the_bounds_is_loaded_without_a_warning() -> None:
    h = ConsumerHarness()
    assert alter(h, [(SESSION_TIMEOUT, Op.SET, "50000")]) is None
    consumer = ConsumerGroupConfig(max_session_timeout_ms=50000)
    again = ConsumerHarness(config=GroupConfig(consumer=consumer))
    again.apply(again.co.load(h.records, again.now))
    assert not [e for e in again.events if isinstance(e, GroupConfigCapped)]


def test_the_daemons_assignment_interval_is_bounded() -> None:
    assert ConsumerGroupConfig(assignment_interval_ms=15000).problems() == []
    assert ConsumerGroupConfig(assignment_interval_ms=15001).problems() == [
        "group.consumer.assignment.interval.ms must be less than or equal to"
        " group.consumer.max.assignment.interval.ms"
    ]
