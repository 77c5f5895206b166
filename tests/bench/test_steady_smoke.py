"""bench.steady runs every target at every depth, and the daemon answers without errors;
with --colocation it says how often each server shared the generator's CPU."""

from __future__ import annotations

import shutil

import pytest

from bench import steady


@pytest.mark.skipif(shutil.which("cc") is None, reason="the C ceiling is compiled with cc")
def test_steady_measures_both_protocols_and_both_ceilings() -> None:
    # main raises if a daemon answer carries an error (a member that is not steady).
    result = steady.main(["--quick", "--no-write", "--colocation"])
    medians = result["summary"]["medians"]
    targets = (
        "classic",
        "classic-pure",
        "consumer",
        "consumer-pure",
        "consumer-general",
        "ceiling-c",
        "ceiling-py",
    )
    assert set(medians) == {f"{t}@{d}" for t in targets for d in steady.DEPTHS}
    assert all(v["rate_per_s"] > 0 for v in medians.values())
    assert all(0 <= v["user_us_per_request"] <= v["cpu_us_per_request"] for v in medians.values())
    assert set(result["summary"]["ratios"]) >= {"consumer/classic cpu per request @64"}
    # 2 ms samples over each target's measured requests: a share of them, when there were any.
    shares = [v["same_cpu_share"] for v in medians.values()]
    assert all(0 <= share <= 1 for share in shares if share == share)
    assert any(share == share for share in shares)
