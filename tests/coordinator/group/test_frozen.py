"""The state machine's value types: frozen to mypy, plain slotted dataclasses at run time,
with a frozen dataclass's equality and hashing (records and events are compared and used
as keys by the journal and tests)."""

from __future__ import annotations

import dataclasses

from coordinator.group.events import MemberJoined
from coordinator.group.frozen import frozen
from coordinator.group.records import MemberRecord
from coordinator.group.results import JoinGroupResult


@frozen
class _Point:
    x: int
    y: int = 0


def test_values_compare_and_hash_by_their_fields() -> None:
    assert _Point(1, 2) == _Point(1, 2) and _Point(1) != _Point(1, 1)
    assert hash(_Point(1, 2)) == hash(_Point(1, 2))
    assert len({_Point(1, 2), _Point(1, 2), _Point(2, 1)}) == 2
    joined = MemberJoined("g", "m", None, "c", "/h", ["range"])
    assert joined == dataclasses.replace(joined) and repr(joined).startswith("MemberJoined(")


def test_values_are_slotted_with_their_declared_fields() -> None:
    result = JoinGroupResult(0, member_id="m")
    assert not hasattr(result, "__dict__")
    assert [f.name for f in dataclasses.fields(MemberRecord)][:2] == [
        "member_id",
        "group_instance_id",
    ]
    assert dataclasses.is_dataclass(result) and dataclasses.asdict(_Point(3))["x"] == 3
