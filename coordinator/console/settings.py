"""The console's options (``--http-listen``, ``--http-admin``, ``--http-analytics``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    listen: tuple[str, int] | None = None  # None: no console
    admin: bool = False  # the actions (delete a group, reset offsets, remove a static member)
    #: The ``analyze --report`` directory whose summary.json the Analysis page shows.
    analytics: Path | None = None
