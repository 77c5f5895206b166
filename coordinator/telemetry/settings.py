"""The journal's and the metrics endpoint's settings (``--journal-dir``, ``--metrics-listen``).

A module of its own so that the configuration reads them without importing what attaches
the journal and the metrics to a running node (``observability``, which knows the runtime).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ObservabilitySettings:
    journal_dir: Path | None = None  # None: no journal
    journal_max_bytes: int = 64 << 20  # rotate when the file reaches this size...
    journal_rotate_seconds: int = 3600  # ...or this much time has passed
    metrics_listen: tuple[str, int] | None = None  # None: no metrics endpoint
