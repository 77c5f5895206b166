"""``group-coordinator``: the daemon's command line.

Every ``serve`` option can also be given as an environment variable
(``GROUP_COORDINATOR_<OPTION>``, e.g. ``GROUP_COORDINATOR_LISTEN``; a repeatable option takes
its values separated by spaces) or in a TOML file passed with ``--config`` (keys are the
option names, e.g. ``group-initial-rebalance-delay-ms = 0`` or ``topic = ["orders:6"]``;
underscores for dashes work too; an unknown key is refused). The command line wins over the
environment, which wins over the file. ``group-coordinator.toml`` is a commented sample.
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..console.options import console_limits_from_options, console_options
from ..console.settings import ConsoleSettings
from ..group.config import GroupConfig
from ..security.options import (
    listener_options,
    listeners_from_options,
    plain_advertised_listener,
    security_from_options,
    security_options,
)
from ..settings.config import Settings, parse_database_url, parse_host_port, parse_topic
from ..settings.consumer_options import consumer_config_from_options, consumer_group_options
from ..settings.limits import ConnectionLimits
from ..shared.errors import StartupError
from ..telemetry.settings import ObservabilitySettings
from ..upstream.options import upstream_from_options, upstream_options

ENV_PREFIX = "GROUP_COORDINATOR"
# Each default is written once, in the dataclass the option fills.
_SETTINGS = Settings()
_GROUP = GroupConfig()
_LIMITS = ConnectionLimits()
_OBSERVABILITY = ObservabilitySettings()
_F = TypeVar("_F", bound=Callable[..., Any])


def option(*decls: str, **kwargs: Any) -> Callable[[_F], _F]:
    """A click option that can also be set as GROUP_COORDINATOR_<LONG_NAME>."""
    long_name = next(d for d in decls if d.startswith("--")).split("/")[0]
    kwargs.setdefault("envvar", f"{ENV_PREFIX}_{long_name[2:].replace('-', '_').upper()}")
    kwargs.setdefault("show_envvar", True)
    return click.option(*decls, **kwargs)


def _load_config(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if not value:
        return value
    try:
        with open(value, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"{value}: {exc}", ctx, param) from None
    keys = _config_keys(ctx.command)
    params = {p.name: p for p in ctx.command.params}
    defaults: dict[str, Any] = {}
    for key, setting in data.items():
        name = keys.get(key)
        if name is None:
            near = difflib.get_close_matches(key, list(keys), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise click.BadParameter(f"{value}: unknown key {key!r}{hint}", ctx, param)
        _check_config_value(ctx, params[name], f"{value}: {key}", setting)
        defaults[name] = setting
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def _check_config_value(ctx: click.Context, p: click.Parameter, where: str, setting: Any) -> None:
    """A file's value is checked as the option's would be, the error naming the file's key
    (click's own message names neither the file nor the key)."""
    if p.multiple and not isinstance(setting, list):
        fix = f"{where.rpartition(': ')[2]} = [{json.dumps(setting)}]"
        raise click.BadParameter(f"{where} takes a list of values: {fix}", ctx)
    try:
        cast = p.type_cast_value(ctx, setting)
        if p.callback is not None and p.callback is not _load_config:
            p.callback(ctx, p, cast)
    except click.BadParameter as exc:
        raise click.BadParameter(f"{where} = {json.dumps(setting)}: {exc.message}", ctx) from None


def _config_keys(command: click.Command) -> dict[str, str]:
    """TOML key -> parameter name: each long option's name, with dashes or underscores."""
    keys: dict[str, str] = {}
    for p in command.params:
        if not isinstance(p, click.Option) or not p.expose_value or p.name is None:
            continue
        for opt in p.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = keys[opt[2:].replace("-", "_")] = p.name
    return keys


def _host_port(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return parse_host_port(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _database_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return parse_database_url(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _topics(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> Any:
    try:
        return tuple(parse_topic(v) for v in value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


#: The admin commands, imported when one is run or listed: the daemon's start-up (which
#: every integration test waits on) then imports neither the Kafka client nor asyncpg.
_ADMIN_COMMANDS = {
    "groups": "coordinator.commands.admin_cli",
    "offsets": "coordinator.commands.admin_cli",
    "conformance": "coordinator.conformance.command",
    "users": "coordinator.security.admin_cli",
    "acls": "coordinator.security.admin_cli",
    "analyze": "coordinator.analytics.command",
    "cluster": "coordinator.cluster.status",
}


class _Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_ADMIN_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _ADMIN_COMMANDS and cmd_name not in self.commands:
            module = importlib.import_module(_ADMIN_COMMANDS[cmd_name])
            self.add_command(getattr(module, cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if exc.ctx is not None and exc.ctx.command.name == "serve":
                # One line: the daemon's options are fixed in a file or a unit, where a
                # usage summary only hides the error.
                exc.ctx = None
            raise


@click.group(cls=_Commands, context_settings={"show_default": True}, invoke_without_command=True)
@click.version_option(package_name="group-coordinator", prog_name="group-coordinator")
@click.pass_context
def main(ctx: click.Context) -> None:
    """A standalone Apache Kafka group coordinator.

    \b
    Exit status of every command:
      0  done
      1  the cluster, the store or Spark refused or could not be reached (a group that
         does not exist, a wrong password, a listener that is not Kafka...)
      2  a mistake on the command line: an unknown option or value (a --state that is
         no state), a --data-dir or --command-config that names nothing usable
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@main.command()
@option(
    "--config",
    type=click.Path(exists=True, dir_okay=False),
    callback=_load_config,
    is_eager=True,
    expose_value=False,
    help="TOML file with option defaults",
)
@option(
    "--listen",
    default="{}:{}".format(*_SETTINGS.listen),
    callback=_host_port,
    help="HOST:PORT to bind",
)
@listener_options(option)
@option("--node-id", default=_SETTINGS.node_id, type=int, help="node.id reported in Metadata")
@option("--cluster-id", default=_SETTINGS.cluster_id, help="cluster id reported in Metadata")
@option(
    "--data-dir",
    default=str(_SETTINGS.data_dir),
    type=click.Path(file_okay=False, path_type=Path),
    help="where durable state lives",
)
@option(
    "--topic",
    "topics",
    multiple=True,
    callback=_topics,
    help="virtual topic NAME:PARTITIONS (repeatable)",
)
@option(
    "--auto-create-topics/--no-auto-create-topics",
    default=_SETTINGS.auto_create_topics,
    help="auto.create.topics.enable: Metadata for an unknown topic creates it",
)
@option(
    "--num-partitions",
    default=_SETTINGS.num_partitions,
    type=click.IntRange(min=1),
    help="num.partitions for auto-created topics",
)
@option(
    "--group-min-session-timeout-ms",
    default=_GROUP.min_session_timeout_ms,
    type=int,
    help="group.min.session.timeout.ms: the shortest session a member may ask for",
)
@option(
    "--group-max-session-timeout-ms",
    default=_GROUP.max_session_timeout_ms,
    type=int,
    help="group.max.session.timeout.ms: the longest session a member may ask for",
)
@option(
    "--group-initial-rebalance-delay-ms",
    default=_GROUP.initial_rebalance_delay_ms,
    type=click.IntRange(min=0),
    help="group.initial.rebalance.delay.ms: how long the first join of an empty group waits"
    " for more members",
)
@option(
    "--group-max-size",
    default=_GROUP.max_size,
    type=click.IntRange(min=1),
    help="group.max.size: members per group",
)
@consumer_group_options(option)
@option(
    "--max-groups",
    default=_GROUP.max_groups,
    type=click.IntRange(min=1),
    help="groups this node holds (no Kafka setting); a new one beyond is refused",
)
@option(
    "--group-max-pending-members",
    default=_GROUP.max_pending_members,
    type=click.IntRange(min=1),
    help="KIP-394 member ids handed out but not yet joined, per group (no Kafka setting)",
)
@option(
    "--group-max-member-metadata-bytes",
    default=_GROUP.max_member_metadata_bytes,
    type=click.IntRange(min=1),
    help="a member's protocol metadata, all protocols together (no Kafka setting)",
)
@option(
    "--max-topics",
    default=_SETTINGS.max_topics,
    type=click.IntRange(min=1),
    help="virtual topics in the catalog (no Kafka setting)",
)
@option(
    "--max-partitions",
    default=_SETTINGS.max_partitions,
    type=click.IntRange(min=1),
    help="partitions of all virtual topics together (no Kafka setting)",
)
@option(
    "--offset-metadata-max-bytes",
    default=_GROUP.offset_metadata_max_bytes,
    type=click.IntRange(min=0),
    help="offset.metadata.max.bytes: the longest commit metadata",
)
@option(
    "--offsets-retention-minutes",
    default=_SETTINGS.offsets_retention_minutes,
    type=click.IntRange(min=1),
    help="offsets.retention.minutes: how long offsets outlive their group",
)
@option(
    "--offsets-retention-check-interval-ms",
    default=_SETTINGS.offsets_retention_check_interval_ms,
    type=click.IntRange(min=1),
    help="offsets.retention.check.interval.ms: how often expired offsets are removed",
)
@option(
    "--store",
    default=_SETTINGS.store,
    type=click.Choice(["sqlite", "postgres", "memory"]),
    help="sqlite: durable state in --data-dir; postgres: in --database-url, shared by the"
    " nodes of a cluster; memory: nothing survives a restart",
)
@option(
    "--database-url",
    default=_SETTINGS.database_url,
    callback=_database_url,
    help="PostgreSQL for --store postgres (given alone, it implies --store postgres):"
    " postgresql://USER@HOST:PORT/DATABASE (a password here shows in ps: use ~/.pgpass,"
    " PGPASSFILE or PGPASSWORD, or this option's variable)",
)
@option(
    "--offsets-topic-num-partitions",
    default=_SETTINGS.offsets_topic_num_partitions,
    type=click.IntRange(min=1),
    help="offsets.topic.num.partitions: coordinator partitions groups are placed on"
    " (--store postgres; fixed once the database holds data)",
)
@option(
    "--lease-timeout-ms",
    default=_SETTINGS.lease_timeout_ms,
    type=click.IntRange(min=100),
    help="a node that has not renewed its lease for this long is dead: its partitions move",
)
@option(
    "--lease-renew-interval-ms",
    default=_SETTINGS.lease_renew_interval_ms,
    type=click.IntRange(min=10),
    help="how often a node renews its lease and rebalances coordinator partitions",
)
@option(
    "--node-settle-ms",
    default=None,
    type=click.IntRange(min=0),
    help="a node back after its lease ran out gets partitions from others only after being"
    " live this long (default: twice --lease-timeout-ms)",
)
@option(
    "--heartbeat-checkpoint-interval-ms",
    default=_SETTINGS.heartbeat_checkpoint_interval_ms,
    type=click.IntRange(min=0),
    help="how often members' last heartbeats are persisted (0: only with group snapshots)",
)
@option(
    "--max-connections",
    default=_LIMITS.max_connections,
    type=click.IntRange(min=1),
    help="max.connections (Kafka: unlimited)",
)
@option(
    "--max-connections-per-ip",
    default=_LIMITS.max_connections_per_ip,
    type=click.IntRange(min=1),
    help="max.connections.per.ip (Kafka: unlimited)",
)
@option(
    "--connections-max-idle-ms",
    default=_LIMITS.connections_max_idle_ms,
    type=click.IntRange(min=1),
    help="connections.max.idle.ms: idle connections are closed after this",
)
@option(
    "--request-receive-timeout-ms",
    default=_LIMITS.request_receive_timeout_ms,
    type=click.IntRange(min=1),
    help="a request must arrive whole within this time of its first byte",
)
@option(
    "--max-buffered-response-bytes",
    default=_LIMITS.max_buffered_response_bytes,
    type=click.IntRange(min=1024),
    help="unsent response bytes per connection before reading from it stops",
)
@option(
    "--slow-reader-timeout-ms",
    default=_LIMITS.slow_reader_timeout_ms,
    type=click.IntRange(min=1),
    help="how long a connection may not read its responses before it is dropped",
)
@option(
    "--socket-request-max-bytes",
    default=_SETTINGS.socket_request_max_bytes,
    type=click.IntRange(min=1024),
    help="socket.request.max.bytes: the largest request frame",
)
@option(
    "--sasl-server-max-receive-size",
    default=_SETTINGS.sasl_server_max_receive_size,
    type=click.IntRange(min=1024),
    help="largest frame before SASL authentication (Kafka's sasl.server.max.receive.size)",
)
@security_options(option)
@upstream_options(option)
@option(
    "--journal-dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="write the group event journal (JSON lines, docs/journal.md) here",
)
@option(
    "--journal-max-bytes",
    default=_OBSERVABILITY.journal_max_bytes,
    type=click.IntRange(min=1024),
    help="rotate the journal file when it reaches this size",
)
@option(
    "--journal-rotate-seconds",
    default=_OBSERVABILITY.journal_rotate_seconds,
    type=click.IntRange(min=1),
    help="rotate the journal file this often",
)
@option(
    "--metrics-listen",
    default=None,
    callback=_host_port,
    help="HOST:PORT to serve Prometheus metrics on (/metrics); off when not given",
)
@option(
    "--http-listen",
    default=None,
    callback=_host_port,
    help="HOST:PORT to serve the web console and its JSON API on (docs/console.md); off"
    " when not given",
)
@option(
    "--http-admin/--no-http-admin",
    default=ConsoleSettings().admin,
    help="let the console delete empty groups, reset offsets and remove static members",
)
@option(
    "--http-analytics",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="the directory `analyze --report` writes: the console's Analysis page shows its "
    "summary (top groups, storms), read when the page is opened",
)
@console_options(option)
@option(
    "--log-format",
    default=_SETTINGS.log_format,
    type=click.Choice(["plain", "json"]),
    help="plain (for people) or json (one object per line)",
)
@option(
    "--log-level",
    default=_SETTINGS.log_level,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="the least severe log level written",
)
def serve(**options: Any) -> None:
    """Run the coordinator daemon."""
    import uvloop

    from ..telemetry import logs

    options["store"] = _store(click.get_current_context(), options)
    _check_session_timeouts(options)
    settings = settings_from_options(options)
    logs.configure(settings.log_format, settings.log_level)
    os.umask(0o077)  # whatever the daemon creates is its user's alone (private_files.py)
    try:
        uvloop.run(_serve(settings))
    except StartupError as exc:
        click.echo(f"group-coordinator: {exc}", err=True)
        raise SystemExit(2) from None


def _store(ctx: click.Context, options: dict[str, Any]) -> str:
    """A database URL given alone means PostgreSQL; given with another store, a mistake."""
    store: str = options["store"]
    if options["database_url"] is None or store == "postgres":
        return store
    if ctx.get_parameter_source("store") == click.core.ParameterSource.DEFAULT:
        return "postgres"
    raise click.UsageError(
        f"--database-url is only used with --store postgres, not --store {store}:"
        " drop one of the two"
    )


def _check_session_timeouts(options: dict[str, Any]) -> None:
    low, high = options["group_min_session_timeout_ms"], options["group_max_session_timeout_ms"]
    if low > high:
        raise click.UsageError(
            f"--group-min-session-timeout-ms ({low}) is above --group-max-session-timeout-ms"
            f" ({high}): no session timeout would be accepted"
        )


async def _serve(settings: Settings) -> None:
    from ..shell import collector
    from ..shell.server import serve as run_server

    collector.tune()  # the daemon's process only (not a test that runs the command)
    await run_server(settings)


def settings_from_options(options: dict[str, Any]) -> Settings:
    return Settings(
        listen=options["listen"],
        advertised_listener=plain_advertised_listener(options),
        node_id=options["node_id"],
        cluster_id=options["cluster_id"],
        data_dir=options["data_dir"],
        topics=options["topics"],
        auto_create_topics=options["auto_create_topics"],
        num_partitions=options["num_partitions"],
        group=GroupConfig(
            min_session_timeout_ms=options["group_min_session_timeout_ms"],
            max_session_timeout_ms=options["group_max_session_timeout_ms"],
            initial_rebalance_delay_ms=options["group_initial_rebalance_delay_ms"],
            max_size=options["group_max_size"],
            offset_metadata_max_bytes=options["offset_metadata_max_bytes"],
            max_groups=options["max_groups"],
            max_pending_members=options["group_max_pending_members"],
            max_member_metadata_bytes=options["group_max_member_metadata_bytes"],
            consumer=consumer_config_from_options(options),
        ),
        max_topics=options["max_topics"],
        max_partitions=options["max_partitions"],
        offsets_retention_minutes=options["offsets_retention_minutes"],
        offsets_retention_check_interval_ms=options["offsets_retention_check_interval_ms"],
        limits=ConnectionLimits(
            max_connections=options["max_connections"],
            max_connections_per_ip=options["max_connections_per_ip"],
            connections_max_idle_ms=options["connections_max_idle_ms"],
            request_receive_timeout_ms=options["request_receive_timeout_ms"],
            max_buffered_response_bytes=options["max_buffered_response_bytes"],
            slow_reader_timeout_ms=options["slow_reader_timeout_ms"],
        ),
        store=options["store"],
        database_url=options["database_url"],
        offsets_topic_num_partitions=options["offsets_topic_num_partitions"],
        lease_timeout_ms=options["lease_timeout_ms"],
        lease_renew_interval_ms=options["lease_renew_interval_ms"],
        node_settle_ms=options["node_settle_ms"],
        heartbeat_checkpoint_interval_ms=options["heartbeat_checkpoint_interval_ms"],
        socket_request_max_bytes=options["socket_request_max_bytes"],
        sasl_server_max_receive_size=options["sasl_server_max_receive_size"],
        observability=ObservabilitySettings(
            journal_dir=options["journal_dir"],
            journal_max_bytes=options["journal_max_bytes"],
            journal_rotate_seconds=options["journal_rotate_seconds"],
            metrics_listen=options["metrics_listen"],
        ),
        console=ConsoleSettings(
            listen=options["http_listen"],
            admin=options["http_admin"],
            analytics=options["http_analytics"],
            **console_limits_from_options(options),
        ),
        log_format=options["log_format"],
        log_level=options["log_level"],
        listeners=listeners_from_options(options),
        security=security_from_options(options),
        upstream=upstream_from_options(options),
    )


if __name__ == "__main__":
    main()
