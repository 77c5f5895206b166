"""Daemon settings: Kafka's names and defaults for everything a broker would configure.

Values come from, in rising priority: the defaults below, an optional TOML file
(``--config``), environment variables (``GROUP_COORDINATOR_<OPTION>``) and command-line
options. ``coordinator.commands.cli`` maps those onto :class:`Settings`; nothing else reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from protocol.frames import DEFAULT_MAX_FRAME_BYTES

from ..console.settings import ConsoleSettings
from ..group.config import GroupConfig
from ..security.config import Listener, SecurityProtocol, SecuritySettings, advertisable
from ..shared.catalog import MAX_TOPIC_NAME, valid_topic_name
from ..telemetry.settings import ObservabilitySettings
from ..upstream.settings import UpstreamSettings
from .limits import ConnectionLimits
from .ports import parse_port


def parse_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), parse_port(port, value)


def parse_database_url(value: str) -> str:
    """``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE``, checked before asyncpg sees it
    (which answers a bad port with a traceback)."""
    parts = urlsplit(value)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(
            f"expected postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE, got {safe_url(value)!r}"
        )
    for address in parts.netloc.rpartition("@")[2].split(","):  # libpq: host1:p1,host2:p2
        if address.startswith("["):  # [IPv6]:PORT
            port = address.partition("]")[2].removeprefix(":")
        else:
            port = address.partition(":")[2]
        if port:
            parse_port(port, safe_url(value), "postgresql://USER@HOST:PORT/DATABASE")
    return value


def safe_url(url: str) -> str:
    """The URL without its password, for logs and error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def parse_topic(value: str) -> tuple[str, int]:
    name, sep, partitions = value.rpartition(":")
    if not sep or not name or not partitions.isdigit() or int(partitions) < 1:
        raise ValueError(f"expected NAME:PARTITIONS with PARTITIONS >= 1, got {value!r}")
    if not valid_topic_name(name):
        # The rule CreateTopics applies; one option per topic (it is repeatable).
        raise ValueError(
            f"{name!r} is not a topic name: 1-{MAX_TOPIC_NAME} characters of a-z, A-Z, 0-9,"
            " '.', '_' and '-' (give --topic once per topic)"
        )
    return name, int(partitions)


@dataclass(frozen=True, slots=True)
class Settings:
    listen: tuple[str, int] = ("127.0.0.1", 9092)
    advertised_listener: tuple[str, int] | None = None  # defaults to `listen`
    node_id: int = 0
    cluster_id: str = "group-coordinator"
    data_dir: Path = Path("data")
    topics: tuple[tuple[str, int], ...] = ()
    auto_create_topics: bool = False  # auto.create.topics.enable (Kafka's default is true)
    num_partitions: int = 1  # num.partitions, for auto-created topics
    max_topics: int = 10_000  # virtual topics in the catalog
    max_partitions: int = 1_000_000  # partitions of all virtual topics together
    group: GroupConfig = field(default_factory=GroupConfig)
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    #: "sqlite" (durable, in data_dir), "postgres" (database_url; shared by a cluster) or
    #: "memory" (nothing survives).
    store: str = "sqlite"
    database_url: str | None = None  # postgresql://USER@HOST:PORT/DB (--store postgres)
    # A cluster (--store postgres): offsets.topic.num.partitions, and the node leases.
    offsets_topic_num_partitions: int = 50
    lease_timeout_ms: int = 6000
    lease_renew_interval_ms: int = 1000
    #: A node back after its lease ran out is given others' partitions only after this
    #: long (cluster/plan.py: hysteresis); None: twice the lease timeout.
    node_settle_ms: int | None = None
    heartbeat_checkpoint_interval_ms: int = 1000  # 0: only snapshots carry heartbeats
    socket_request_max_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: sasl.server.max.receive.size: the frame cap before SASL authentication succeeds.
    sasl_server_max_receive_size: int = 524288
    fetch_max_wait_cap_ms: int = 30000  # a Fetch long-poll never parks longer than this
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    console: ConsoleSettings = field(default_factory=ConsoleSettings)
    log_format: str = "plain"
    log_level: str = "INFO"
    #: Kafka's ``listeners``; empty means one PLAINTEXT listener on ``listen``.
    listeners: tuple[Listener, ...] = ()
    security: SecuritySettings = field(default_factory=SecuritySettings)
    #: ``--upstream``: the Kafka-compatible cluster records are forwarded to (None: virtual
    #: topics only).
    upstream: UpstreamSettings | None = None

    @property
    def advertised(self) -> tuple[str, int]:
        return self.advertised_listener or advertisable(*self.listen)

    @property
    def effective_listeners(self) -> tuple[Listener, ...]:
        if self.listeners:
            return self.listeners
        host, port = self.listen
        return (Listener(SecurityProtocol.PLAINTEXT, host, port, self.advertised_listener),)
