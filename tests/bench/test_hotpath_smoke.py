"""bench.hotpath runs and reports every stage of a heartbeat."""

from __future__ import annotations

from bench import hotpath
from coordinator.shell.hot_reads import HOT_AFTER_READS


def test_hotpath_times_the_general_path_the_lane_and_the_connection() -> None:
    # main asserts that the lane's answer is the general path's, byte for byte, and that
    # the connection wrote one answer per pipelined heartbeat. Enough heartbeats that the
    # connection stage makes more reads in a row than a connection needs to go hot (its
    # transport has no socket, so it must stay on data_received).
    heartbeats = hotpath.PIPELINED * (HOT_AFTER_READS + 2)
    result = hotpath.main(["--heartbeats", str(heartbeats), "--repeats", "2"])
    stages = {"decode", "handle", "encode", "general total", "lane", "connection"}
    # With ACLs: main asserts every heartbeat answered without error, and (where the
    # compiled lane is built) that the walker answered them.
    stages |= {"connection, ACLs", "connection, ACLs, Python lane"}
    assert set(result) == stages
    assert all(median > 0 and least > 0 for median, least in result.values())
    total = result["general total"][0]
    parts = [result[s][0] for s in ("decode", "handle", "encode")]
    assert abs(total - sum(parts)) < 1e-9
