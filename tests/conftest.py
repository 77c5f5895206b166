"""Test-session settings shared by every package's tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from tests.hypothesis_profiles import CI, FAST
from tests.postgres_server import PostgresServer, postgres_server

settings.load_profile(CI)

ROOT = Path(__file__).resolve().parent.parent
# Tool caches are the tools' business; anything else a test leaves in the checkout (a
# SQLite store in ./data that `make run` then loads, say) is a bug.
CACHES = ("__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache", ".venv")


def _tree() -> set[str] | None:
    """Untracked, ignored and modified paths of the checkout (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {
        line
        for line in out.splitlines()
        if not any(part in CACHES or part.endswith(".egg-info") for part in Path(line[3:]).parts)
    }


def pytest_configure(config: pytest.Config) -> None:
    """A run that leaves the integration tests out (``make test-fast``) runs the property
    sweeps on fewer examples (``hypothesis_profiles``); ``--hypothesis-profile`` wins.

    What tools cache for the user (Spark's class archive, matplotlib's fonts, chromium)
    and Hypothesis's examples go to one temporary directory for the run: a test run writes
    nothing in the user's home or the checkout. The xdist workers inherit it from the
    process that starts them."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        cache = tempfile.mkdtemp(prefix="group-coordinator-tests-cache-")
        config.stash[_CACHE] = cache
        os.environ["XDG_CACHE_HOME"] = cache
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(cache, "hypothesis")
    set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])
    if config.getoption("hypothesis_profile", None) is None and "not integration" in (
        config.getoption("markexpr", "") or ""
    ):
        settings.load_profile(FAST)


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(_CACHE, None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_TREE] = _tree()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_TREE, None)
    after = _tree()
    if before is None or after is None:
        return
    changed = sorted(after - before)
    if changed:
        session.config.stash[_CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    changed = terminalreporter.config.stash.get(_CHANGED, [])
    if changed:
        terminalreporter.section("tests wrote into the working tree", red=True)
        for line in changed:
            terminalreporter.write_line(line)


_TREE = pytest.StashKey[set[str] | None]()
_CACHE = pytest.StashKey[str]()
_CHANGED = pytest.StashKey[list[str]]()


#: Directories whose every test runs on real timers: the client's group members against a
#: daemon in the test's process, heartbeating, expiring and rebalancing in real time.
TIMED = (ROOT / "tests" / "coordinator" / "client",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs PostgreSQL starts its server (a process, on first use), and a test
    in ``TIMED`` waits on real timers: integration tests wherever they are (``make
    test-fast`` leaves those out)."""
    integration = pytest.mark.integration
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        timed = any(item.path.is_relative_to(d) for d in TIMED)
        if timed or "postgres" in getattr(item, "fixturenames", ()) or "postgres" in params:
            item.add_marker(integration)
    # Longest first, so that on several workers (make test) the last minutes are not one
    # Spark job or cluster run that started late: Spark, then other integration tests.
    items.sort(key=_run_first)


#: Where the longest tests are (whole JVMs): started before anything else.
LONGEST = (ROOT / "tests" / "coordinator" / "analytics", ROOT / "tests" / "chaos")


def _run_first(item: pytest.Item) -> int:
    if any(item.path.is_relative_to(d) for d in LONGEST) or "analytics" in item.path.name:
        return 0
    return 1 if item.get_closest_marker("integration") is not None else 2


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session, started on first use (tests that need a
    database create their own in it)."""
    with postgres_server() as server:
        yield server
