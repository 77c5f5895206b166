"""Independent Spark jobs submitted at once, from threads, as Spark's scheduler allows.

Spark runs one job's stages at a time only when it is given one job at a time: between a
job's last task and the next job's first, and while one straggling task ends a stage,
cores sit idle. Several independent tables written together keep every core busy (the
tasks still share the same cores and memory: as many run at once as before).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def together(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run each callable in its own thread; their results by name, once all are done.

    The threads are PySpark's ``InheritableThread`` (each has its own JVM thread, so job
    descriptions stay apart). The first exception raised is raised again here."""
    from pyspark import InheritableThread

    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def work(name: str, job: Callable[[], Any]) -> None:
        try:
            results[name] = job()
        except BaseException as exc:  # raised again in the caller's thread
            errors.append(exc)

    threads = [InheritableThread(target=work, args=(name, job)) for name, job in jobs.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
