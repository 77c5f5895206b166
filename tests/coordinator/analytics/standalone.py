"""A Spark standalone master and one worker on 127.0.0.1, started from the pyspark package's
own ``bin/spark-class``, for tests that submit to a real cluster manager."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.analytics.command import SMALL_JVM

START_TIMEOUT_S = 60.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Standalone:
    url: str  # spark://127.0.0.1:PORT
    web: str  # http://127.0.0.1:PORT of the master's UI (its /json/ says what ran)
    env: dict[str, str]

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.web}/json/", timeout=5) as r:
            return dict(json.load(r))


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    cmd = [str(spark_home() / "bin" / "spark-class"), *args]
    with log.open("wb") as out:
        # Own session: teardown kills the JVM and the launcher script together.
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@contextmanager
def standalone_cluster(tmp: Path, cores: int = 1, memory: str = "1g") -> Iterator[Standalone]:
    """Master and worker up, the worker registered; both killed on exit."""
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_WORKER_DIR": str(tmp / "work"),
        # The master and worker: a few seconds of work each, not hours.
        "SPARK_DAEMON_JAVA_OPTS": " ".join(SMALL_JVM),
    }
    tmp.mkdir(parents=True, exist_ok=True)
    port, web_port = free_port(), free_port()
    cluster = Standalone(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}", env)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_spawn(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                             "--port", str(port), "--webui-port", str(web_port)],
                            env, tmp / "master.log"))  # fmt: skip
        procs.append(_spawn(["org.apache.spark.deploy.worker.Worker", cluster.url,
                             "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                             "--cores", str(cores), "--memory", memory,
                             "--work-dir", str(tmp / "work")],
                            env, tmp / "worker.log"))  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            for proc, log in zip(procs, ("master.log", "worker.log"), strict=True):
                if proc.poll() is not None:
                    raise RuntimeError(f"{log} ended: {(tmp / log).read_text()[-2000:]}")
            try:
                workers = cluster.state().get("workers", [])
                if any(w.get("state") == "ALIVE" for w in workers):
                    break
            except OSError:
                pass  # the master's UI is not up yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"no worker registered within {START_TIMEOUT_S}s")
            time.sleep(0.5)
        yield cluster
    finally:
        for proc in reversed(procs):
            _stop(proc)
