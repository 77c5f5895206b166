"""The compiled codecs agree with construct's own parse/build for every API and version."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.apis import ALL
from protocol.schema import Struct
from tests.hypothesis_profiles import examples

from .strategies import messages

CASES = [
    (cls, v)
    for api in ALL
    for cls in (api.request, api.response)
    for v in range(api.min_version, api.max_version + 1)
]


@pytest.mark.parametrize(("cls", "version"), CASES, ids=lambda x: getattr(x, "__name__", x))
@settings(
    max_examples=examples(15, fast=3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_compiled_codec_matches_construct(
    cls: type[Struct], version: int, data: st.DataObject
) -> None:
    msg = data.draw(messages(cls, version))
    fast = codec.encode(msg, version)
    assert codec.build_reference(msg, version) == fast
    assert codec.decode(cls, fast, version) == msg
    assert codec.parse_reference(cls, fast, version) == msg
