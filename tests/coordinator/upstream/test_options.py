"""``serve --upstream``'s options: virtual topics refused in one line, settings filled."""

from __future__ import annotations

from click.testing import CliRunner

from coordinator.commands.cli import main
from coordinator.upstream.options import parse_bootstrap


def test_topic_with_upstream_is_refused_in_one_clear_line() -> None:
    result = CliRunner().invoke(
        main, ["serve", "--upstream", "127.0.0.1:9092", "--topic", "orders:3", "--store", "memory"]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if "--topic" in line]
    assert len(lines) == 1 and "--upstream" in lines[0] and "drop --topic" in lines[0]


def test_bootstrap_is_a_comma_list_of_addresses() -> None:
    assert parse_bootstrap("a:1, b:2") == (("a", 1), ("b", 2))
