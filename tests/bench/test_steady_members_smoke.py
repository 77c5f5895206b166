"""bench.steady_members forms both populations, paces their heartbeats and measures each
phase; no heartbeat is answered with an error."""

from __future__ import annotations

from bench import steady_members


def test_steady_members_measures_both_populations_without_errors() -> None:
    result = steady_members.main(["--quick", "--no-write"])
    assert result["consumer_heartbeat_interval_ms"] == 5000  # Kafka's default, told
    for r in result["rounds"]:
        assert r["consumer"]["errors"] == {} and r["classic"]["errors"] == {}
        assert r["consumer"]["answered"] > 0 and r["classic"]["answered"] > 0
        assert r["idle"]["answered"] == 0
    assert set(result["summary"]["ratios"]) >= {"consumer/classic cores"}
