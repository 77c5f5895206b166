"""--only: users filter scenarios by area, name or both, with globs or plain words."""

from __future__ import annotations

from coordinator.conformance.registry import all_scenarios, select


def test_plain_word_matches_area_or_name_as_substring() -> None:
    static = select("static")
    assert static
    assert all("static" in s.full_name.lower() for s in static)


def test_glob_matches_the_scenario_name_alone() -> None:
    found = select("testStatic*")
    assert found
    assert all(s.name.startswith("testStatic") for s in found)


def test_glob_matches_the_area_alone() -> None:
    areas = {s.area for s in all_scenarios()}
    area = sorted(areas)[0]
    assert {s.full_name for s in select(area)} == {
        s.full_name for s in all_scenarios() if s.area == area
    }


def test_no_pattern_selects_everything_and_nonsense_selects_nothing() -> None:
    assert select(None) == all_scenarios()
    assert select("no-such-scenario-*") == []
