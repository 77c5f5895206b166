"""Listener and security settings, named as Kafka names them (listeners, ssl.*, sasl.*)."""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass, field
from pathlib import Path

from ..settings.ports import parse_port


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
ANONYMOUS = "User:ANONYMOUS"


@dataclass(frozen=True, slots=True)
class Listener:
    """One bound socket: ``SASL_SSL://127.0.0.1:9094`` and what clients are told to use."""

    protocol: SecurityProtocol
    host: str
    port: int
    advertised: tuple[str, int] | None = None  # defaults to (host, port)

    @property
    def name(self) -> str:
        return self.protocol.value

    @property
    def advertised_address(self) -> tuple[str, int]:
        return self.advertised or advertisable(self.host, self.port)

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


def advertisable(host: str, port: int) -> tuple[str, int]:
    """What to tell clients about a bound address: a wildcard means nothing to a client, so,
    like Kafka, this machine's canonical host name is advertised instead."""
    return (socket.getfqdn() if host in WILDCARD_HOSTS else host), port


def parse_listener(value: str) -> tuple[SecurityProtocol, str, int]:
    """``PROTOCOL://HOST:PORT`` (Kafka's ``listeners`` syntax; the name is the protocol)."""
    scheme, sep, address = value.partition("://")
    if not sep:
        raise ValueError(f"expected PROTOCOL://HOST:PORT, got {value!r}")
    try:
        protocol = SecurityProtocol(scheme.upper())
    except ValueError:
        known = ", ".join(p.value for p in SecurityProtocol)
        raise ValueError(f"unknown security protocol {scheme!r} (one of {known})") from None
    host, colon, port = address.rpartition(":")
    if not colon:
        raise ValueError(f"expected PROTOCOL://HOST:PORT, got {value!r}")
    return protocol, host.strip("[]"), parse_port(port, value, "PROTOCOL://HOST:PORT")


class ClientAuth(enum.StrEnum):
    """``ssl.client.auth``: whether TLS clients must present a certificate."""

    REQUIRED = "required"
    REQUESTED = "requested"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_keyfile_password: str | None = None
    ssl_cafile: Path | None = None
    ssl_client_auth: ClientAuth = ClientAuth.NONE
    sasl_enabled_mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    acls_enabled: bool = False
    super_users: frozenset[str] = field(default_factory=frozenset)
    # connection.failed.authentication.delay.ms: a failed login is answered this late.
    failed_authentication_delay_ms: int = 100
    # Failures of one user from one address per window answered after the delay alone;
    # past them, later and later, one check at a time (throttle.FailedLoginThrottle).
    max_failed_authentications: int = 5
    failed_authentication_window_ms: int = 60_000
    # How often users and ACLs are re-read from the store (the CLI edits them there).
    refresh_interval_ms: int = 1000


def parse_super_users(value: str) -> frozenset[str]:
    """``super.users``: ``User:alice;User:bob``."""
    users = frozenset(u.strip() for u in value.split(";") if u.strip())
    for user in users:
        if not user.startswith("User:") or len(user) == len("User:"):
            raise ValueError(f"a super user is User:NAME, got {user!r}")
    return users
