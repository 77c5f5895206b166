"""``serve`` options for the upstream cluster (``--upstream`` and how the daemon reaches
it), and their parsing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..security.config import SASL_MECHANISMS, SecurityProtocol
from ..settings.config import parse_host_port
from .settings import UpstreamSettings

_F = TypeVar("_F", bound=Callable[..., Any])
_DEFAULTS = UpstreamSettings(bootstrap=())
Option = Callable[..., Callable[[Any], Any]]


def parse_bootstrap(value: str) -> tuple[tuple[str, int], ...]:
    addresses = tuple(parse_host_port(v.strip()) for v in value.split(",") if v.strip())
    if not addresses:
        raise ValueError(f"expected HOST:PORT[,HOST:PORT...], got {value!r}")
    return addresses


def _bootstrap(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return parse_bootstrap(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def upstream_options(option: Option) -> Callable[[_F], _F]:
    def apply(fn: _F) -> _F:
        decorators = [
            option(
                "--upstream",
                default=None,
                callback=_bootstrap,
                help="HOST:PORT[,HOST:PORT...] of a Kafka-compatible cluster: records stay"
                " there (Produce, Fetch, topics are forwarded), the groups are served here"
                " (docs/upstream.md)",
            ),
            option(
                "--upstream-security-protocol",
                default=_DEFAULTS.security_protocol.value,
                type=click.Choice([p.value for p in SecurityProtocol]),
                help="how the daemon connects to the upstream (its own login, never a client's)",
            ),
            option(
                "--upstream-sasl-mechanism",
                default=_DEFAULTS.sasl_mechanism,
                type=click.Choice(SASL_MECHANISMS),
                help="the daemon's SASL mechanism toward the upstream",
            ),
            option("--upstream-sasl-username", default=None, help="the daemon's upstream user"),
            option(
                "--upstream-sasl-password",
                default=None,
                help="the daemon's upstream password (better from the environment)",
            ),
            option(
                "--upstream-tls-ca",
                default=None,
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="CA bundle the upstream's certificate chains to (default: the system's)",
            ),
            option(
                "--upstream-tls-check-hostname/--no-upstream-tls-check-hostname",
                default=_DEFAULTS.tls_check_hostname,
                help="check the upstream certificate's host name",
            ),
            option(
                "--upstream-request-timeout-ms",
                default=_DEFAULTS.request_timeout_ms,
                type=click.IntRange(min=100),
                help="a forwarded request unanswered this long (a Fetch: plus its max wait)"
                " gets a retriable error",
            ),
            option(
                "--upstream-metadata-refresh-ms",
                default=_DEFAULTS.metadata_refresh_ms,
                type=click.IntRange(min=100),
                help="how often the upstream's topics are read for the groups",
            ),
            option(
                "--upstream-lag-refresh-ms",
                default=_DEFAULTS.lag_refresh_ms,
                type=click.IntRange(min=100),
                help="log-end offsets for lag are read at most this often",
            ),
            option(
                "--upstream-broker-ports",
                "upstream_broker_port_base",
                default=_DEFAULTS.broker_port_base,
                type=click.IntRange(min=0, max=65535),
                help="first of the ports the daemon listens on for upstream brokers, one per"
                " broker and listener (0: ephemeral; give one to publish them from a container)",
            ),
            option(
                "--upstream-node-id-offset",
                default=_DEFAULTS.node_id_offset,
                type=click.IntRange(min=1),
                help="clients see upstream broker N as node N + this (apart from our nodes)",
            ),
        ]
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def upstream_from_options(options: dict[str, Any]) -> UpstreamSettings | None:
    bootstrap = options.get("upstream")
    if not bootstrap:
        return None
    if options.get("topics"):
        raise click.UsageError(
            "--topic declares virtual topics, and with --upstream the topics are the"
            " upstream's: drop --topic (create topics on the upstream)"
        )
    return UpstreamSettings(
        bootstrap=bootstrap,
        security_protocol=SecurityProtocol(options["upstream_security_protocol"]),
        sasl_mechanism=options["upstream_sasl_mechanism"],
        sasl_username=options["upstream_sasl_username"],
        sasl_password=options["upstream_sasl_password"],
        tls_ca=options["upstream_tls_ca"],
        tls_check_hostname=options["upstream_tls_check_hostname"],
        request_timeout_ms=options["upstream_request_timeout_ms"],
        metadata_refresh_ms=options["upstream_metadata_refresh_ms"],
        lag_refresh_ms=options["upstream_lag_refresh_ms"],
        node_id_offset=options["upstream_node_id_offset"],
        broker_port_base=options["upstream_broker_port_base"],
    )
