"""The console benchmark runs at tiny size (its times are not checked: that is the
benchmark's job, bench/results/console.md)."""

from __future__ import annotations

from bench import console


def test_console_benchmark_fetches_every_page_of_many_groups() -> None:
    result = console.main(["--quick", "--no-write", "--groups", "120", "--repeats", "1"])
    assert result["groups"] == 120
    assert {r["request"] for r in result["requests"]} == {name for name, _ in console.REQUESTS}
    assert all(r["bytes"] > 0 for r in result["requests"])
