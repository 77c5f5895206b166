"""A real PostgreSQL server for the tests: the machine's own server binaries (``initdb``,
``postgres``) run in a temporary directory on a loopback port, as ``nobody`` when the tests
run as root (PostgreSQL refuses to run as root). Nothing needs to exist beforehand; every
test gets a database of its own.

``make install`` makes sure the binaries exist (Debian's ``postgresql`` package).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Where Debian and most distributions keep the server binaries (not on PATH).
SEARCH = ["/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin"]


def server_binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for pattern in SEARCH:
        for directory in sorted(glob.glob(pattern), reverse=True):  # the newest version
            candidate = Path(directory) / name
            if candidate.exists():
                return str(candidate)
    raise FileNotFoundError(
        f"PostgreSQL's {name} was not found: run `make install` (it installs Debian's"
        " postgresql package) or put the server binaries on PATH"
    )


#: The first server's freshly initialised data directory, copied for every later server of
#: the process: ``initdb`` took ~4 s on a loaded machine, a copy a fraction of a second.
_template: Path | None = None


def _initdb(data_dir: Path, user: str, run_as: str | None, env: dict[str, str]) -> None:
    global _template
    if _template is None:
        root = Path(tempfile.mkdtemp(prefix="coordinator-pg-template-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        if run_as is not None:
            account = pwd.getpwnam(run_as)
            os.chown(root, account.pw_uid, account.pw_gid)
        template = root / "data"
        initdb = [server_binary("initdb"), "-D", str(template), "-U", user, "--auth=trust"]
        subprocess.run(
            [*initdb, "-E", "UTF8"],
            check=True,
            capture_output=True,
            timeout=120,
            user=run_as,
            env=env,
            cwd=root,
        )
        _template = template
    # -a keeps the owner (the server's user) and the modes PostgreSQL insists on.
    subprocess.run(["cp", "-a", str(_template), str(data_dir)], check=True, timeout=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    port: int
    user: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    run_as: str | None
    command: list[str]
    env: dict[str, str]
    log: Path
    databases: int = 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, label: str) -> str:
        """A new, empty database named after ``label``; returns its URL."""
        self.databases += 1
        safe = re.sub(r"[^a-z0-9_]+", "_", label.lower())[:40]
        name = f"{safe}_{self.databases}"
        psql = shutil.which("psql") or server_binary("psql")
        subprocess.run(
            [psql, "-q", "-X", self.url(), "-c", f'CREATE DATABASE "{name}"'],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return self.url(name)

    def restart(self, down_s: float = 0.0) -> None:
        """A fast shutdown (clients are disconnected, as when the database fails over),
        ``down_s`` of nothing, and the same server back on the same port."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)
        time.sleep(down_s)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command,
                stdout=subprocess.DEVNULL,
                stderr=log,
                user=self.run_as,
                env=self.env,
                cwd=self.data_dir.parent,
            )
        _wait_until_ready(self, self.log)

    def stop(self) -> None:
        if self.process.poll() is None:
            # SIGINT: a fast shutdown. A smart one (SIGTERM) waits for every client to
            # disconnect: for a connection a test left open, until the timeout below.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextlib.contextmanager
def postgres_server(fsync: bool = False) -> Iterator[PostgresServer]:
    """A started server. Without ``fsync`` (the tests) a commit is written to the OS, not
    flushed to the disk: it survives a process killed (any of the tests' faults), not the
    machine losing power, and a loaded disk no longer sets the pace of every commit,
    CREATE DATABASE and shutdown. The benchmarks measure with ``fsync``."""
    root = Path(tempfile.mkdtemp(prefix="coordinator-pg-"))
    data_dir, socket_dir = root / "data", root / "socket"
    run_as = "nobody" if os.geteuid() == 0 else None
    user = "postgres"
    if run_as is not None:
        account = pwd.getpwnam(run_as)
        socket_dir.mkdir()
        for path in (root, socket_dir):
            os.chown(path, account.pw_uid, account.pw_gid)
    else:
        socket_dir.mkdir()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    _initdb(data_dir, user, run_as, env)
    port = free_port()
    command = [server_binary("postgres"), "-D", str(data_dir), "-p", str(port)]
    command += ["-h", "127.0.0.1", "-k", str(socket_dir), "-c", "max_connections=200"]
    command += [] if fsync else ["-c", "fsync=off"]
    with open(root / "postgres.log", "wb") as log:  # the child keeps its own descriptor
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=log, user=run_as, env=env, cwd=root
        )
    server = PostgresServer(
        port, user, process, data_dir, run_as, command, env, root / "postgres.log"
    )
    try:
        _wait_until_ready(server, root / "postgres.log")
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _wait_until_ready(server: PostgresServer, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"postgres exited: {log.read_text(errors='replace')[-2000:]}")
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", server.port), timeout=1),
        ):
            # Accepting connections; it may still be starting up: try a real query.
            psql = shutil.which("psql") or server_binary("psql")
            ready = subprocess.run(
                [psql, "-q", "-X", server.url(), "-c", "SELECT 1"],
                capture_output=True,
                timeout=10,
            )
            if ready.returncode == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"postgres did not start: {log.read_text(errors='replace')[-2000:]}")
