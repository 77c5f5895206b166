"""The KIP-848 benchmark runs end to end at tiny size (timings are not checked)."""

from __future__ import annotations

import pytest

from bench import kip848

pytestmark = pytest.mark.integration  # a daemon process


def test_kip848_benchmark_runs_and_a_joiner_moves_only_its_share() -> None:
    result = kip848.main(["--quick", "--no-write"])
    [run] = result["runs"]
    assert run["classic"]["ok"]
    assert run["join"]["rounds"] >= 1
    # A sticky server-side assignor: the joiner's partitions are the only ones that move.
    assert run["joiner"]["partitions_moved"] == run["joiner"]["joiner_partitions"] > 0
