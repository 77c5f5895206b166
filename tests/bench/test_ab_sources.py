"""bench.ab compares revisions: a daemon started from another source tree must run that
tree's code, not the checkout the benchmark was started from."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from bench import servers

FAKE_CLI = textwrap.dedent(
    """
    import os, socket, sys, time
    port = int(sys.argv[sys.argv.index("--listen") + 1].rsplit(":", 1)[1])
    with open(os.environ["AB_SOURCES_REPORT"], "w") as f:
        f.write(__file__)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    time.sleep(30)
    """
)


@pytest.mark.integration  # starts a process
# A tree of now, and one from before coordinator/'s modules were gathered into rooms.
@pytest.mark.parametrize("package", ["commands", None])
def test_daemon_from_another_tree_imports_that_tree(tmp_path: Path, package: str | None) -> None:
    src = tmp_path / "src"
    (src / "coordinator").mkdir(parents=True)
    (src / "coordinator" / "__init__.py").write_text("")
    cli = src / "coordinator" / "cli.py"
    if package is not None:
        (src / "coordinator" / package).mkdir()
        (src / "coordinator" / package / "__init__.py").write_text("")
        cli = src / "coordinator" / package / "cli.py"
    cli.write_text(FAKE_CLI)
    report = tmp_path / "imported"
    os.environ["AB_SOURCES_REPORT"] = str(report)
    try:
        with servers.start_daemon(src, "older"):
            deadline = time.monotonic() + 10
            while not report.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        del os.environ["AB_SOURCES_REPORT"]
    assert Path(report.read_text()).resolve() == cli.resolve()
