"""``serve`` options for the console's limits, hosts and proxy (``--http-*``); the rest of
its options (``--http-listen``, ``--http-admin``, ``--http-analytics``) are in the CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from .settings import ConsoleSettings

_F = TypeVar("_F", bound=Callable[..., Any])
_DEFAULTS = ConsoleSettings()  # each option's default is the field it fills
Option = Callable[..., Callable[[Any], Any]]


def _origin(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise click.BadParameter(f"expected SCHEME://HOST[:PORT] (no path), got {value!r}")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def console_options(option: Option) -> Callable[[_F], _F]:
    decls: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (
            ("--http-max-connections",),
            dict(
                default=_DEFAULTS.max_connections,
                type=click.IntRange(min=1),
                help="console connections open at once (apart from the Kafka listeners')",
            ),
        ),
        (
            ("--http-fd-reserve",),
            dict(
                default=_DEFAULTS.fd_reserve,
                type=click.IntRange(min=0),
                help="file descriptors the console leaves to the Kafka listeners: it holds"
                " at most the descriptor limit minus this",
            ),
        ),
        (
            ("--http-header-timeout-ms",),
            dict(
                default=_DEFAULTS.header_timeout_ms,
                type=click.IntRange(min=100),
                help="a console request's headers must arrive within this",
            ),
        ),
        (
            ("--http-idle-timeout-ms",),
            dict(
                default=_DEFAULTS.idle_timeout_ms,
                type=click.IntRange(min=100),
                help="a console connection with no request in progress is closed after this",
            ),
        ),
        (
            ("--http-allowed-host", "http_allowed_hosts"),
            dict(
                multiple=True,
                help="a Host the console answers to (repeatable; '*' for any); default: the"
                " --http-listen address, localhost, 127.0.0.1 and ::1",
            ),
        ),
        (
            ("--http-public-origin",),
            dict(
                default=None,
                callback=_origin,
                help="SCHEME://HOST[:PORT] browsers use to reach the console through a"
                " reverse proxy (logins and actions must come from it)",
            ),
        ),
        (
            ("--http-trusted-proxy", "http_trusted_proxies"),
            dict(
                multiple=True,
                help="address of a reverse proxy whose X-Forwarded-For/-Proto or Forwarded"
                " header the console believes (repeatable)",
            ),
        ),
        (
            ("--http-max-streams",),
            dict(
                default=_DEFAULTS.max_streams,
                type=click.IntRange(min=1),
                help="live console pages open at once, all clients together",
            ),
        ),
        (
            ("--http-max-streams-per-client",),
            dict(
                default=_DEFAULTS.max_streams_per_client,
                type=click.IntRange(min=1),
                help="live console pages one client (session, or address without ACLs) may"
                " keep open",
            ),
        ),
        (
            ("--http-stream-budget",),
            dict(
                default=_DEFAULTS.stream_budget,
                type=click.FloatRange(min=0.01, max=1.0),
                help="share of the event loop all live console pages together may spend rendering",
            ),
        ),
        (
            ("--http-max-sessions-per-user",),
            dict(
                default=_DEFAULTS.max_sessions_per_user,
                type=click.IntRange(min=1),
                help="console sessions one user may hold; a new login ends the user's oldest",
            ),
        ),
    ]

    def apply(f: _F) -> _F:
        for args, kwargs in reversed(decls):
            f = option(*args, **kwargs)(f)
        return f

    return apply


def console_limits_from_options(options: dict[str, Any]) -> dict[str, Any]:
    """ConsoleSettings' fields these options fill."""
    return {
        "max_connections": options["http_max_connections"],
        "fd_reserve": options["http_fd_reserve"],
        "header_timeout_ms": options["http_header_timeout_ms"],
        "idle_timeout_ms": options["http_idle_timeout_ms"],
        "allowed_hosts": tuple(h.lower() for h in options["http_allowed_hosts"]),
        "public_origin": options["http_public_origin"],
        "trusted_proxies": tuple(options["http_trusted_proxies"]),
        "max_streams": options["http_max_streams"],
        "max_streams_per_client": options["http_max_streams_per_client"],
        "stream_budget": options["http_stream_budget"],
        "max_sessions_per_user": options["http_max_sessions_per_user"],
    }
