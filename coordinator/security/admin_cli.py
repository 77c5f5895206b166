"""``group-coordinator users ...`` and ``group-coordinator acls ...``: edit the users (SCRAM
credentials) and ACLs in the SQLite store of ``--data-dir``. A running daemon picks the
change up within a second (it re-reads them); no restart is needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..settings.config import parse_database_url
from ..shared.errors import CommandLineError
from ..store import SecurityRows, SqliteStore, Store, Write
from .acls import (
    CLUSTER_NAME,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate,
)
from .config import SCRAM_MECHANISMS
from .credentials import MIN_ITERATIONS, make_credential

_F = TypeVar("_F", bound=Callable[..., Any])


def _remember_url(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        try:
            parse_database_url(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    ctx.meta["database_url"] = value


def _data_dir(fn: _F) -> _F:
    """Where the daemon's store is: its --data-dir (SQLite) or its --database-url."""
    fn = click.option(
        "--database-url",
        default=None,
        envvar="GROUP_COORDINATOR_DATABASE_URL",
        show_envvar=True,
        expose_value=False,
        callback=_remember_url,
        help="the daemon's --database-url (--store postgres); --data-dir is then unused",
    )(fn)
    return click.option(
        "--data-dir",
        default="data",
        envvar="GROUP_COORDINATOR_DATA_DIR",
        show_envvar=True,
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="the daemon's --data-dir",
    )(fn)


def _check_data_dir(data_dir: Path, write: Write | None) -> None:
    """A mistyped --data-dir is said so, never made into a new store no daemon reads: the
    directory must exist (the daemon makes it when it first starts), and a command that
    only reads needs a store in it."""
    if not data_dir.is_dir():
        raise CommandLineError(
            f"--data-dir {str(data_dir)!r} is not a directory: give the daemon's --data-dir"
            f" (it is made when the daemon first starts; before that: mkdir {data_dir})"
        )
    if write is None and not (data_dir / SqliteStore.FILENAME).exists():
        raise CommandLineError(
            f"--data-dir {str(data_dir)!r} holds no store ({SqliteStore.FILENAME}): give the"
            " daemon's --data-dir"
        )


def _where(data_dir: Path) -> str:
    database_url = click.get_current_context().meta.get("database_url")
    return "the database" if database_url else f"{data_dir}"


def _in_store(data_dir: Path, write: Write | None) -> SecurityRows:
    database_url = click.get_current_context().meta.get("database_url")
    if not database_url:
        _check_data_dir(data_dir, write)

    async def go() -> SecurityRows:
        store: Store
        if database_url:
            from ..store.postgres import PostgresStore

            store = PostgresStore(database_url)
        else:
            store = SqliteStore(data_dir, exclusive=False)  # beside a running daemon
        await store.open()
        try:
            if write:
                await store.write(write)
            return await store.read_security()
        finally:
            await store.close()

    return asyncio.run(go())


@click.group()
def users() -> None:
    """SASL users (stored as salted SCRAM credentials, never as passwords)."""


@users.command("add")
@click.argument("username")
@click.option(
    "--password",
    prompt=True,
    hide_input=True,
    confirmation_prompt=True,
    help="prompted for when not given (it is not stored, only SCRAM keys derived from it)",
)
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    type=click.Choice(SCRAM_MECHANISMS),
    help="default: both SCRAM mechanisms (PLAIN logins check against either)",
)
@click.option("--iterations", default=MIN_ITERATIONS, type=click.IntRange(min=MIN_ITERATIONS))
@_data_dir
def users_add(
    username: str, password: str, mechanisms: tuple[str, ...], iterations: int, data_dir: Path
) -> None:
    """Add USERNAME, or replace its password."""
    if not username:
        raise click.BadParameter("the username must not be empty")
    creds = [
        make_credential(username, password, m, iterations) for m in mechanisms or SCRAM_MECHANISMS
    ]
    _in_store(data_dir, Write(credentials=creds))
    click.echo(f"user {username}: {', '.join(c.mechanism for c in creds)}")


@users.command("delete")
@click.argument("username")
@click.option("--mechanism", type=click.Choice(SCRAM_MECHANISMS), default=None)
@_data_dir
def users_delete(username: str, mechanism: str | None, data_dir: Path) -> None:
    """Remove USERNAME's credentials (one mechanism's with --mechanism)."""
    before = {c.username for c in _in_store(data_dir, None).credentials}
    if username not in before:
        raise click.ClickException(f"no user {username!r}")
    _in_store(data_dir, Write(deleted_credentials=[(username, mechanism)]))
    click.echo(f"deleted {username}" + (f" ({mechanism})" if mechanism else ""))


@users.command("list")
@_data_dir
def users_list(data_dir: Path) -> None:
    """Users and their mechanisms (no key material is shown)."""
    by_user: dict[str, list[str]] = {}
    for c in _in_store(data_dir, None).credentials:
        by_user.setdefault(c.username, []).append(f"{c.mechanism}(iterations={c.iterations})")
    for name, mechs in sorted(by_user.items()):
        click.echo(f"{name}  {' '.join(mechs)}")
    if not by_user:
        click.echo(f"no users in {_where(data_dir)} (add one: users add NAME)")


@click.group()
def acls() -> None:
    """ACLs on groups, topics and the cluster (checked with --acls-enabled)."""


def _binding_options(fn: _F) -> _F:
    decorators = [
        click.option("--principal", required=True, help="User:NAME, or User:* for anyone"),
        click.option(
            "--operation",
            "operations",
            multiple=True,
            required=True,
            type=click.Choice([o.name for o in Operation], case_sensitive=False),
            help="repeatable",
        ),
        click.option("--group", default=None, help="a group resource"),
        click.option("--topic", default=None, help="a topic resource"),
        click.option("--cluster", is_flag=True, help="the cluster resource"),
        click.option(
            "--pattern-type",
            default="literal",
            type=click.Choice(["literal", "prefixed"], case_sensitive=False),
            help="literal: this name (or * for all); prefixed: names that start with it",
        ),
        click.option(
            "--permission",
            default="allow",
            type=click.Choice(["allow", "deny"], case_sensitive=False),
        ),
        click.option("--host", default="*", help="client address the binding applies to"),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def _bindings(
    principal: str,
    operations: tuple[str, ...],
    group: str | None,
    topic: str | None,
    cluster: bool,
    pattern_type: str,
    permission: str,
    host: str,
) -> list[AclBinding]:
    resources = [
        (rt, name)
        for rt, name in (
            (ResourceType.GROUP, group),
            (ResourceType.TOPIC, topic),
            (ResourceType.CLUSTER, CLUSTER_NAME if cluster else None),
        )
        if name is not None
    ]
    if len(resources) != 1:
        raise click.UsageError("give exactly one of --group, --topic, --cluster")
    [(resource_type, name)] = resources
    out = [
        AclBinding(
            principal=principal,
            resource_type=resource_type,
            resource_name=name,
            pattern_type=PatternType[pattern_type.upper()],
            operation=Operation[op.upper()],
            permission=Permission[permission.upper()],
            host=host,
        )
        for op in operations
    ]
    try:
        for b in out:
            validate(b)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    return out


@acls.command("add")
@_binding_options
@_data_dir
def acls_add(data_dir: Path, **kwargs: Any) -> None:
    """Add bindings (one per --operation)."""
    bindings = _bindings(**kwargs)
    _in_store(data_dir, Write(acls=bindings))
    for b in bindings:
        click.echo(f"added {b}")


@acls.command("remove")
@_binding_options
@_data_dir
def acls_remove(data_dir: Path, **kwargs: Any) -> None:
    """Remove exactly these bindings."""
    bindings = _bindings(**kwargs)
    stored = set(_in_store(data_dir, None).acls)
    missing = [b for b in bindings if b not in stored]
    if missing:
        raise click.ClickException("no such ACL: " + "; ".join(map(str, missing)))
    _in_store(data_dir, Write(deleted_acls=bindings))
    for b in bindings:
        click.echo(f"removed {b}")


@acls.command("list")
@click.option("--principal", default=None, help="only this principal's bindings")
@_data_dir
def acls_list(principal: str | None, data_dir: Path) -> None:
    """Every binding, one per line."""
    shown = [
        b for b in _in_store(data_dir, None).acls if principal is None or b.principal == principal
    ]
    for b in shown:
        click.echo(str(b))
    if not shown:
        whose = f" for {principal}" if principal is not None else ""
        click.echo(f"no ACLs{whose} in {_where(data_dir)}")
