"""The time-to-stable benchmark runs end to end once per library (times are not checked)."""

from __future__ import annotations

import pytest

from bench import time_to_stable

pytestmark = pytest.mark.integration


def test_time_to_stable_measures_every_library() -> None:
    times = time_to_stable.main(["--quick"])
    assert set(times) == {"aiokafka", "confluent-kafka", "kafka-python"}
    assert all(len(ts) == 1 for ts in times.values())
