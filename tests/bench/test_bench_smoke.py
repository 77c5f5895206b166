"""Every scenario of ``python -m bench`` runs once at tiny size (numbers are not checked,
only that each part measured something and that the servers answered without errors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import run, servers

pytestmark = pytest.mark.integration


@pytest.mark.bench
def test_quick_bench_measures_every_server_and_writes_the_report(tmp_path: Path) -> None:
    result = run.main(["--quick", "--out", str(tmp_path), "--only", "heartbeat,rebalance,scale"])
    expected = {"daemon", "ceiling"} | ({"tansu"} if servers.tansu_binary() else set())
    for scenario, by_server in result["heartbeat"]["summary"].items():
        assert set(by_server) == expected, scenario
        for name, row in by_server.items():
            assert row["rate_per_s"] > 0, (scenario, name)
            assert row["error_responses"] == 0, (scenario, name)
            assert 0 < row["p50_ms"] <= row["p99_ms"]
    for name in expected - {"ceiling"}:
        rows = result["rebalance"]["summary"][name]
        assert {(r["members"], r["mode"]) for r in rows} == {(5, "join"), (5, "leave")}
        assert all("seconds" in r for r in rows), rows
    scale = result["scale"]
    assert scale["members"] == 100 and scale["requests"] > 0 and scale["errors"] == {}
    assert scale["rss_idle_mb"] > 0
    for name in ("bench.json", "bench.md", "heartbeat.png", "rebalance.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert "| target | measured | met |" in (tmp_path / "bench.md").read_text()


def test_ceiling_answers_every_served_api_version() -> None:
    from bench.ceiling import SERVED, canned_responses
    from protocol.apis import BY_KEY

    canned = canned_responses()
    for key in SERVED:
        api = BY_KEY[key]
        assert all((key, v) in canned for v in range(api.min_version, api.max_version + 1))
