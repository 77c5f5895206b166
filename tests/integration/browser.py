"""Debian's chromium driven by Playwright, as the console's browser tests use it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
#: Headless, and nothing that talks to the internet on its own (updates, sync, QUIC probes).
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A browser; the test is skipped, saying why, when Debian's chromium is missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"{CHROMIUM} is missing: the console's browser tests need Debian's chromium"
            " (apt-get install chromium; make install does it)"
        )
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
