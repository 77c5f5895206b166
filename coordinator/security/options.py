"""``serve`` options for listeners, TLS, SASL and ACLs (Kafka's names), and their parsing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..settings.config import parse_host_port
from .config import (
    SASL_MECHANISMS,
    ClientAuth,
    Listener,
    SecurityProtocol,
    SecuritySettings,
    parse_listener,
    parse_super_users,
)

_F = TypeVar("_F", bound=Callable[..., Any])
_DEFAULTS = SecuritySettings()  # each option's default is the field it fills
Option = Callable[..., Callable[[Any], Any]]


def _listeners(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> Any:
    try:
        parsed = tuple(parse_listener(v) for v in value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    names = [p for p, _h, _port in parsed]
    if len(set(names)) != len(names):
        raise click.BadParameter("each security protocol may have one listener")
    return parsed


def _advertised(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> Any:
    """HOST:PORT (for the single listener) or PROTOCOL://HOST:PORT (for that listener)."""
    plain: tuple[str, int] | None = None
    by_protocol: dict[SecurityProtocol, tuple[str, int]] = {}
    try:
        for v in value:
            if "://" in v:
                protocol, host, port = parse_listener(v)
                by_protocol[protocol] = (host, port)
            else:
                plain = parse_host_port(v)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    return plain, by_protocol


def _mechanisms(_ctx: click.Context, _param: click.Parameter, value: str) -> Any:
    names = tuple(m.strip().upper() for m in value.split(",") if m.strip())
    unknown = [m for m in names if m not in SASL_MECHANISMS]
    if unknown or not names:
        raise click.BadParameter(f"mechanisms are a comma list of {', '.join(SASL_MECHANISMS)}")
    return names


def _super_users(_ctx: click.Context, _param: click.Parameter, value: str) -> Any:
    try:
        return parse_super_users(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def listener_options(option: Option) -> Callable[[_F], _F]:
    """``--advertised-listener`` (which it replaces) and ``--listener``."""

    def apply(fn: _F) -> _F:
        decorators = [
            option(
                "--advertised-listener",
                "advertised_listeners",
                multiple=True,
                callback=_advertised,
                help="HOST:PORT clients are told to connect to (default: the bound address);"
                " with several listeners PROTOCOL://HOST:PORT, once per listener",
            ),
            option(
                "--listener",
                "listeners",
                multiple=True,
                callback=_listeners,
                help="PROTOCOL://HOST:PORT, PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT,"
                " SASL_SSL (repeatable; replaces --listen)",
            ),
        ]
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def security_options(option: Option) -> Callable[[_F], _F]:
    def apply(fn: _F) -> _F:
        path = click.Path(exists=True, dir_okay=False, path_type=Path)
        decorators = [
            option("--ssl-certfile", type=path, help="PEM certificate chain of this node"),
            option("--ssl-keyfile", type=path, help="PEM private key of --ssl-certfile"),
            option("--ssl-key-password", default=None, help="password of --ssl-keyfile"),
            option("--ssl-cafile", type=path, help="CA bundle that client certificates chain to"),
            option(
                "--ssl-client-auth",
                default=_DEFAULTS.ssl_client_auth.value,
                type=click.Choice([c.value for c in ClientAuth]),
                help="ssl.client.auth: whether TLS clients must present a certificate",
            ),
            option(
                "--sasl-enabled-mechanisms",
                default=",".join(_DEFAULTS.sasl_enabled_mechanisms),
                callback=_mechanisms,
                help="comma list of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
            ),
            option(
                "--acls-enabled/--no-acls-enabled",
                "--authorizer/--no-authorizer",
                default=_DEFAULTS.acls_enabled,
                help="check ACLs (default deny) on groups and topics",
            ),
            option(
                "--super-users",
                default="",
                callback=_super_users,
                help="super.users: User:NAME;User:OTHER pass every ACL check",
            ),
            option(
                "--failed-authentication-delay-ms",
                default=_DEFAULTS.failed_authentication_delay_ms,
                type=click.IntRange(min=0),
                help="connection.failed.authentication.delay.ms",
            ),
            option(
                "--max-failed-authentications",
                default=_DEFAULTS.max_failed_authentications,
                type=click.IntRange(min=1),
                help="failed logins per client address and user per minute answered after the"
                " delay alone; past them each is answered twice as late, up to 10 s, one"
                " check at a time (ten times this per address); nobody is locked out",
            ),
        ]
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def listeners_from_options(options: dict[str, Any]) -> tuple[Listener, ...]:
    _plain, by_protocol = options["advertised_listeners"]
    listeners = tuple(
        Listener(protocol, host, port, by_protocol.get(protocol))
        for protocol, host, port in options["listeners"]
    )
    stray = set(by_protocol) - {lst.protocol for lst in listeners}
    if stray:
        raise click.UsageError(
            "--advertised-listener names a protocol with no --listener: " + ", ".join(sorted(stray))
        )
    return listeners


def plain_advertised_listener(options: dict[str, Any]) -> tuple[str, int] | None:
    plain: tuple[str, int] | None = options["advertised_listeners"][0]
    return plain


def security_from_options(options: dict[str, Any]) -> SecuritySettings:
    listeners = options["listeners"]
    if any(p.uses_tls for p, _h, _port in listeners) and not options["ssl_certfile"]:
        raise click.UsageError("an SSL or SASL_SSL listener needs --ssl-certfile")
    return SecuritySettings(
        ssl_certfile=options["ssl_certfile"],
        ssl_keyfile=options["ssl_keyfile"],
        ssl_keyfile_password=options["ssl_key_password"],
        ssl_cafile=options["ssl_cafile"],
        ssl_client_auth=ClientAuth(options["ssl_client_auth"]),
        sasl_enabled_mechanisms=options["sasl_enabled_mechanisms"],
        acls_enabled=options["acls_enabled"],
        super_users=options["super_users"],
        failed_authentication_delay_ms=options["failed_authentication_delay_ms"],
        max_failed_authentications=options["max_failed_authentications"],
    )
