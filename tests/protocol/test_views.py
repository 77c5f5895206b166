"""Field views (``codec.compiled_view``): the hot path's tuple-returning decoders read the
same values as the full decoders, and refuse the same malformed bytes."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.apis.heartbeat import HeartbeatRequest
from protocol.apis.offset_commit import OffsetCommitRequest
from protocol.errors import DecodeError
from protocol.headers import RequestHeader
from protocol.schema import Struct

from .strategies import messages

CASES = [(HeartbeatRequest, v) for v in range(5)] + [(RequestHeader, 1), (RequestHeader, 2)]
CASES += [(OffsetCommitRequest, v) for v in (2, 8, 9)]


def _fields(cls: type[Struct]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "unknown_tagged_fields")


@pytest.mark.parametrize(("cls", "version"), CASES, ids=lambda x: getattr(x, "__name__", x))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_view_reads_what_decode_reads(cls: type[Struct], version: int, data: st.DataObject) -> None:
    msg = data.draw(messages(cls, version))
    buf = codec.encode(msg, version)
    names = _fields(cls)
    values, end = codec.compiled_view(cls, version, names)(buf, 0, len(buf))
    assert end == len(buf)
    decoded = codec.decode(cls, buf, version)
    assert values == tuple(getattr(decoded, name) for name in names)
    # Any prefix is refused by both.
    cut = data.draw(st.integers(0, len(buf) - 1))
    with pytest.raises((DecodeError, *codec.DECODE_FAULTS)):
        codec.compiled_view(cls, version, names)(buf[:cut], 0, cut)
    with pytest.raises(DecodeError):
        codec.decode(cls, buf[:cut], version)


def test_view_of_a_field_absent_in_the_version_is_its_default() -> None:
    buf = codec.encode(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 2)
    view = codec.compiled_view(HeartbeatRequest, 2, ("group_instance_id", "member_id"))
    assert view(buf, 0, len(buf)) == ((None, "m"), len(buf))


def test_view_of_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match="no field"):
        codec.compiled_view(HeartbeatRequest, 4, ("group_id", "nope"))
