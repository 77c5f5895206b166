"""The Kafka test-name table (kafka_scenarios.py) stays complete and points at real tests."""

from __future__ import annotations

import ast
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from coordinator.conformance.registry import all_scenarios

from .kafka_scenarios import CONFORMANCE, COVERED, KAFKA_TEST_NAMES, NOT_APPLICABLE

REPO = Path(__file__).resolve().parents[3]


@cache
def defined_tests(path: str) -> frozenset[str]:
    """Top-level test functions of a test module, read without importing it."""
    tree = ast.parse((REPO / path).read_text(), filename=path)
    return frozenset(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    )


def test_the_kafka_names_are_listed_once():
    assert [name for name, n in Counter(KAFKA_TEST_NAMES).items() if n > 1] == []


def test_every_kafka_name_is_either_covered_or_explained_and_nothing_else():
    names = set(KAFKA_TEST_NAMES)
    assert set(COVERED) & set(NOT_APPLICABLE) == set()
    assert set(COVERED) | set(NOT_APPLICABLE) == names
    assert all(COVERED.values())


@cache
def scenario_names() -> frozenset[str]:
    return frozenset(s.name for s in all_scenarios())


@pytest.mark.parametrize("kafka_name", sorted(COVERED))
def test_every_mapped_test_exists(kafka_name):
    for target in COVERED[kafka_name]:
        if target.startswith(CONFORMANCE):
            assert target.removeprefix(CONFORMANCE) in scenario_names(), target
        else:
            path, _, function = target.partition("::")
            assert path.startswith("tests/") and (REPO / path).is_file(), target
            assert function in defined_tests(path), target
