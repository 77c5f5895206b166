"""The console's options (``--http-listen``, ``--http-admin``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    listen: tuple[str, int] | None = None  # None: no console
    admin: bool = False  # the actions (delete a group, reset offsets, remove a static member)
