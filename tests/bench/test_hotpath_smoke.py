"""bench.hotpath runs and reports every stage of a heartbeat."""

from __future__ import annotations

from bench import hotpath


def test_hotpath_times_the_general_path_the_lane_and_the_connection() -> None:
    # main asserts that the lane's answer is the general path's, byte for byte, and that
    # the connection wrote one answer per pipelined heartbeat.
    result = hotpath.main(["--heartbeats", "200", "--repeats", "2"])
    stages = {"decode", "handle", "encode", "general total", "lane", "connection"}
    assert set(result) == stages
    assert all(median > 0 and least > 0 for median, least in result.values())
    total = result["general total"][0]
    parts = [result[s][0] for s in ("decode", "handle", "encode")]
    assert abs(total - sum(parts)) < 1e-9
