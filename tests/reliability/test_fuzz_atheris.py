"""The atheris fuzzer runs a bounded number of inputs over the splitter and decoders."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # a fuzzer process, 100,000 inputs

pytest.importorskip("atheris")


def test_coverage_guided_fuzzing_finds_nothing_but_decode_errors() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.reliability.fuzz_decoders",
            "-runs=100000",
            "-max_len=512",
            "-seed=1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done 100000 runs" in run.stderr
