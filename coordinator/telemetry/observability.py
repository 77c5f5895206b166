"""The journal (``--journal-dir``) and Prometheus metrics (``--metrics-listen``) of a daemon.

Both are off by default; off, they cost the runtime one ``None`` check per request and an
empty loop per batch of events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from .settings import ObservabilitySettings

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from ..journal import JournalWriter
    from ..shell.runtime import Runtime
    from .metrics import Metrics

log = structlog.get_logger("observability")


class Observability:
    """Attaches the journal and metrics to the runtime; ``close()`` flushes and stops them."""

    def __init__(
        self,
        settings: ObservabilitySettings,
        node_id: int,
        runtime: Runtime,
        connection_count: Callable[[], int],
    ) -> None:
        self.journal: JournalWriter | None = None
        self.metrics: Metrics | None = None
        self._http: WSGIServer | None = None
        if settings.journal_dir is not None:
            from ..journal import JournalWriter

            self.journal = JournalWriter(
                settings.journal_dir,
                node_id,
                settings.journal_max_bytes,
                settings.journal_rotate_seconds,
                clock=runtime.clock,
            )
            runtime.event_sinks.append(self.journal)
            log.info("journal", path=str(self.journal.path))
        if settings.metrics_listen is not None:
            from .metrics import Metrics, take_snapshot

            metrics = self.metrics = Metrics()
            runtime.event_sinks.append(metrics.on_event)
            runtime.metrics = metrics
            metrics.watch(
                runtime.loop,
                lambda: take_snapshot(runtime.groups.stats(), connection_count()),
            )
            host, port = settings.metrics_listen
            self._http = metrics.serve(host, port)
            log.info("metrics", listen=f"{host}:{self.metrics_port}")

    @property
    def metrics_port(self) -> int | None:
        return None if self._http is None else int(self._http.server_port)

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self.journal is not None:
            self.journal.close()
