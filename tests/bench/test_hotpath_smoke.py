"""bench.hotpath runs and reports every stage of a heartbeat."""

from __future__ import annotations

from bench import hotpath


def test_hotpath_times_decode_handle_and_encode_of_a_heartbeat() -> None:
    result = hotpath.main(["--heartbeats", "200", "--repeats", "2"])  # asserts the answer is OK
    assert set(result) == {"decode", "handle", "encode", "total"}
    assert all(median > 0 and least > 0 for median, least in result.values())
    total, parts = result["total"][0], [result[s][0] for s in ("decode", "handle", "encode")]
    assert abs(total - sum(parts)) < 1e-9
