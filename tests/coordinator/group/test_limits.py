"""Limits that are not Kafka's (spec: none) but keep one client from exhausting the node."""

from __future__ import annotations

from coordinator.group import GroupConfig
from coordinator.group.events import LimitReached
from protocol.errors import ErrorCode

from .harness import Harness
from .test_offsets import DAY


def limit_hits(h: Harness) -> list[LimitReached]:
    return [e for e in h.events if isinstance(e, LimitReached)]


def test_a_new_group_beyond_max_groups_is_refused_with_a_retriable_error() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0, max_groups=2))
    h.join(group="a")
    assert h.commit({("t", 0): 1}, group="b") == {("t", 0): ErrorCode.NONE}
    token = h.join(group="c")
    assert h.join_result(token).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.commit({("t", 0): 1}, group="d") == {("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert set(h.co.groups) == {"a", "b"}
    assert limit_hits(h) == [
        LimitReached("c", "max_groups", 2, "COORDINATOR_NOT_AVAILABLE"),
        LimitReached("d", "max_groups", 2, "COORDINATOR_NOT_AVAILABLE"),
    ]
    # Existing groups go on as before.
    assert h.commit({("t", 0): 2}, group="b") == {("t", 0): ErrorCode.NONE}
    # Once a group is gone, a new one fits.
    h.apply(h.co.expire_offsets(h.now + DAY, DAY))
    assert "b" not in h.co.groups
    token = h.join(group="c")
    h.advance(1)
    assert h.join_result(token).error_code == ErrorCode.NONE


def test_pending_member_ids_per_group_are_capped() -> None:
    h = Harness(GroupConfig(max_pending_members=3))
    codes = [h.join_result(h.join(version=4)).error_code for _ in range(4)]
    assert codes == [ErrorCode.MEMBER_ID_REQUIRED] * 3 + [ErrorCode.GROUP_MAX_SIZE_REACHED]
    assert len(h.group().pending_join_members) == 3
    assert limit_hits(h) == [
        LimitReached("group", "group_max_pending_members", 3, "GROUP_MAX_SIZE_REACHED")
    ]
    # The pending ids expire after the session timeout and make room again.
    h.advance(10001)
    assert h.join_result(h.join(version=4)).error_code == ErrorCode.MEMBER_ID_REQUIRED


def test_oversized_member_metadata_is_an_invalid_request() -> None:
    h = Harness(GroupConfig(max_member_metadata_bytes=100))
    token = h.join(protocols=[("range", b"x" * 60), ("roundrobin", b"y" * 41)])
    assert h.join_result(token).error_code == ErrorCode.INVALID_REQUEST
    assert "group" not in h.co.groups
    assert limit_hits(h) == [
        LimitReached("group", "group_max_member_metadata_bytes", 100, "INVALID_REQUEST")
    ]
    token = h.join(protocols=[("range", b"x" * 100)])
    assert h.result(token) is None or h.join_result(token).error_code == ErrorCode.NONE


def test_joining_a_full_group_is_reported_as_a_limit_hit() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0, max_size=1))
    h.stable_group(1)
    assert limit_hits(h) == []
    token = h.join()
    assert h.join_result(token).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert limit_hits(h) == [LimitReached("group", "group_max_size", 1, "GROUP_MAX_SIZE_REACHED")]
