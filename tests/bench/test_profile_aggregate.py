"""The profile report ranks frames by samples on top of the stack and anywhere on it."""

from __future__ import annotations

from pathlib import Path

from bench.profile import aggregate


def test_self_and_inclusive_shares_come_from_the_collapsed_stacks(tmp_path: Path) -> None:
    raw = tmp_path / "stacks.txt"
    raw.write_text(
        "main (coordinator/commands/cli.py:1);drain (coordinator/shell/server.py:2);"
        "write (x.py:3) 3\n"
        "main (coordinator/commands/cli.py:1);drain (coordinator/shell/server.py:2) 1\n"
    )
    report = aggregate(raw, top=5).splitlines()
    assert report[0] == "4 samples"
    start = report.index("self:") + 1
    self_part = report[start : report.index("", start)]
    assert " 75.0%  write (x.py:3)" in self_part
    assert " 25.0%  drain (coordinator/shell/server.py:2)" in self_part
    inclusive = report[report.index("inclusive (coordinator/ and protocol/ frames):") + 1 :]
    assert "100.0%  drain (coordinator/shell/server.py:2)" in inclusive
    assert not any("x.py" in line for line in inclusive)  # only the project's frames


def test_an_empty_capture_says_so(tmp_path: Path) -> None:
    raw = tmp_path / "stacks.txt"
    raw.write_text("")
    assert aggregate(raw, top=5) == "no samples"
