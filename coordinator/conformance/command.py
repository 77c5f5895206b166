"""``group-coordinator conformance``: run the suite against any Kafka-compatible broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..client import security
from ..commands.admin_cli import command_config_option
from ..settings.config import parse_host_port
from . import report
from .probe import Target
from .registry import select
from .runner import FAIL, run

_F = TypeVar("_F", bound=Callable[..., Any])


def _option(*decls: str, **kwargs: Any) -> Callable[[_F], _F]:
    # Own prefix: the target's settings must not be read from the daemon's own variables
    # (GROUP_COORDINATOR_<OPTION>) when both run in one environment.
    long_name = next(d for d in decls if d.startswith("--"))
    env = "GROUP_COORDINATOR_CONFORMANCE_" + long_name[2:].replace("-", "_").upper()
    return click.option(*decls, envvar=env, show_envvar=True, show_default=True, **kwargs)


@click.command()
@_option("--bootstrap", default="127.0.0.1:9092", help="the broker's HOST:PORT")
@command_config_option
@_option("--only", "pattern", default=None, help="scenarios whose area/name match (glob)")
@_option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="write JUnit XML")
@_option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
@_option("--list", "list_only", is_flag=True, help="list the scenarios and exit")
@_option("--initial-rebalance-delay-ms", default=3000, type=int, help="target's setting")
@_option("--min-session-timeout-ms", default=6000, type=int, help="target's setting")
@_option("--max-session-timeout-ms", default=1800000, type=int, help="target's setting")
@_option("--max-group-size", default=None, type=int, help="target's group.max.size (else skipped)")
@_option("--session-timeout-ms", default=10000, type=int, help="members' usual session timeout")
@_option("--reply-timeout-ms", default=10000, type=int, help="how long a due reply may take")
@_option("--topic", default="conformance", help="a topic the target knows (or auto-creates)")
@_option("--topic-partitions", default=4, type=int)
@_option("--parallel", default=8, type=click.IntRange(min=1), help="scenarios at a time")
def conformance(**o: Any) -> None:
    """Check a broker's classic group protocol, scenario by scenario (exit 1 on any failure)."""
    scenarios = select(o["pattern"])
    if o["list_only"]:
        for s in scenarios:
            click.echo(f"{s.full_name}  [faults: {', '.join(s.faults)}]")
        return
    if not scenarios:
        raise click.ClickException(f"no scenario matches {o['pattern']!r}")
    host, port = parse_host_port(o["bootstrap"])
    target = Target(
        host=host,
        port=port,
        initial_rebalance_delay_ms=o["initial_rebalance_delay_ms"],
        min_session_timeout_ms=o["min_session_timeout_ms"],
        max_session_timeout_ms=o["max_session_timeout_ms"],
        max_group_size=o["max_group_size"],
        session_timeout_ms=max(o["session_timeout_ms"], o["min_session_timeout_ms"]),
        reply_timeout_ms=o["reply_timeout_ms"],
        topic=o["topic"],
        topic_partitions=o["topic_partitions"],
    )
    start = time.monotonic()
    try:
        with security.using(o["command_config"]):  # every connection the suite makes
            results = asyncio.run(run(target, scenarios, o["parallel"]))
    except (OSError, TimeoutError) as exc:
        raise click.ClickException(f"cannot reach {o['bootstrap']}: {exc}") from exc
    except RuntimeError as exc:  # the suite's topic could not be created
        raise click.ClickException(str(exc)) from exc
    elapsed = time.monotonic() - start
    if o["as_json"]:
        click.echo(report.to_json(results, o["bootstrap"], elapsed))
    else:
        click.echo(report.table(results))
        click.echo(f"wall time {elapsed:.1f}s")
    if o["junit"]:
        o["junit"].write_text(report.to_junit(results, elapsed))
    if any(r.outcome == FAIL for r in results):
        raise SystemExit(1)
