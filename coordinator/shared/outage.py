"""One log line when a retried job starts failing and one when it works again.

A job retried every second (the lease renewal, re-reading users and ACLs) that logged each
failure wrote two lines a second per node while PostgreSQL was down, burying the one line
that mattered: when the outage began and when it ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Outage:
    def __init__(self, log: Any, what: str, clock: Callable[[], float] = time.monotonic):
        self._log = log
        self._what = what
        self._clock = clock
        self._since: float | None = None
        self.failures = 0  # failed attempts in the current outage

    @property
    def failing(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        self.failures += 1
        if self._since is None:
            self._since = self._clock()
            self._log.error(
                f"{self._what} failed",
                error=str(exc) or repr(exc),
                hint="retrying; one line more when it works again",
            )

    def succeeded(self) -> None:
        if self._since is None:
            return
        self._log.info(
            f"{self._what} works again",
            after_s=round(self._clock() - self._since, 1),
            failed_attempts=self.failures,
        )
        self._since = None
        self.failures = 0
