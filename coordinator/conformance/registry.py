"""Scenario declarations: a decorator that registers a coroutine with its area and faults."""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .probe import Probe

ScenarioFn = Callable[["Probe"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str  # the behaviour, in Kafka's test-name style
    area: str  # API or KIP, e.g. "JoinGroup" or "KIP-345 static membership"
    run: ScenarioFn
    #: Names of deliberately broken behaviours that must make this scenario fail.
    faults: tuple[str, ...]
    #: api key -> lowest version needed; not advertised -> skipped.
    requires: tuple[tuple[int, int], ...]

    @property
    def full_name(self) -> str:
        return f"{self.area} :: {self.name}"


SCENARIOS: list[Scenario] = []


def scenario(
    area: str, *, faults: tuple[str, ...], requires: dict[int, int] | None = None
) -> Callable[[ScenarioFn], ScenarioFn]:
    def register(fn: ScenarioFn) -> ScenarioFn:
        name = fn.__name__
        if any(s.name == name for s in SCENARIOS):
            raise ValueError(f"scenario {name} is declared twice")
        SCENARIOS.append(Scenario(name, area, fn, faults, tuple((requires or {}).items())))
        return fn

    return register


def all_scenarios() -> list[Scenario]:
    from .scenarios import ORDER  # importing the package registers every scenario

    return sorted(SCENARIOS, key=lambda s: ORDER.index(s.run.__module__.rsplit(".", 1)[1]))


def select(pattern: str | None) -> list[Scenario]:
    """Scenarios whose name, area or "area :: name" matches a glob (case-insensitive; a
    pattern without glob characters matches as a substring)."""
    found = all_scenarios()
    if not pattern:
        return found
    pat = pattern.lower()
    if not any(c in pat for c in "*?["):
        pat = f"*{pat}*"
    return [
        s
        for s in found
        if any(fnmatch.fnmatch(text.lower(), pat) for text in (s.full_name, s.area, s.name))
    ]
