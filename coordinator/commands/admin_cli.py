"""``group-coordinator groups ...`` and ``group-coordinator offsets ...``: group administration
in the spirit of ``kafka-consumer-groups.sh``, against the daemon or any Kafka broker.

Every command takes ``--bootstrap HOST:PORT`` (and, for a TLS or SASL listener,
``--command-config FILE``: a Kafka client properties file) and prints a table, or JSON
with ``--json``. Exit status: 0 done, 1 the cluster refused or could not be reached, 2 a
mistake on the command line (``group-coordinator --help``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from protocol.errors import ErrorCode

from ..client import security
from ..client.admin import (
    GroupAdmin,
    GroupDescription,
    GroupListing,
    GroupNotInactiveError,
    PartitionOffsets,
)
from ..client.errors import KafkaClientError
from ..shared.errors import CommandLineError

T = TypeVar("T")
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
#: The states ``groups list --state`` takes: a classic group's and a KIP-848 group's, as
#: Kafka names them (ListGroups v5's StatesFilter).
GROUP_STATES = (
    "Empty",
    "Stable",
    "PreparingRebalance",
    "CompletingRebalance",
    "Assigning",
    "Reconciling",
    "Dead",
)
#: What a group error means, in a sentence (``{group}`` is the group's name).
GROUP_ERRORS = {
    ErrorCode.NON_EMPTY_GROUP: "group {group!r} has members: only an Empty group can be"
    " deleted (stop its consumers first; `groups describe {group}` lists them)",
    ErrorCode.GROUP_ID_NOT_FOUND: "Consumer group {group!r} does not exist.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "not authorized to access group {group!r}",
}


def _state(value: str) -> str:
    """A group state as Kafka names it, given in any case (as kafka-consumer-groups.sh)."""
    by_lower = {s.lower(): s for s in GROUP_STATES}
    if value.lower() not in by_lower:
        raise CommandLineError(
            f"--state {value!r} is not a group state: give one of {', '.join(GROUP_STATES)}"
        )
    return by_lower[value.lower()]


def _load_command_config(
    _ctx: click.Context, _param: click.Parameter, value: Path | None
) -> security.ClientSecurity:
    if value is None:
        return security.PLAINTEXT
    try:
        return security.load_command_config(value)
    except security.SecurityConfigError as exc:
        raise CommandLineError(f"--command-config {exc}") from None


def _run(
    bootstrap: str,
    action: Callable[[GroupAdmin], Coroutine[Any, Any, T]],
    group: str | None = None,
) -> T:
    async def go() -> T:
        async with GroupAdmin(bootstrap) as admin:
            return await action(admin)

    settings: security.ClientSecurity = click.get_current_context().params["command_config"]
    try:
        with security.using(settings):
            return asyncio.run(go())
    except GroupNotInactiveError as exc:
        raise click.ClickException(str(exc)) from exc
    except KafkaClientError as exc:
        said = GROUP_ERRORS.get(exc.code) if exc.code is not None and group else None
        if said is not None:
            raise click.ClickException(said.format(group=group)) from exc
        raise click.ClickException(_hint(str(exc) or type(exc).__name__, settings)) from exc
    except (OSError, TimeoutError, ValueError) as exc:
        raise click.ClickException(_hint(str(exc) or type(exc).__name__, settings)) from exc


def _hint(message: str, settings: security.ClientSecurity) -> str:
    """A closed connection to a listener reached without its security says what to give."""
    if "closed the connection" in message and settings.protocol == "PLAINTEXT":
        return (
            f"{message}: a SASL or SSL listener needs --command-config FILE"
            " (security.protocol, sasl.mechanism, sasl.jaas.config)"
        )
    return message


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; missing values print as '-'."""
    cells = [[str(h) for h in headers]]
    cells += [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _emit(as_json: bool, data: object, text: str) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True) if as_json else text)


def _partitions(assignment: dict[str, list[int]] | None) -> str | None:
    if assignment is None:
        return None
    return ",".join(f"{t}-{p}" for t, ps in sorted(assignment.items()) for p in ps)


_bootstrap = click.option(
    "--bootstrap", default=DEFAULT_BOOTSTRAP, show_default=True, help="a broker's HOST:PORT"
)
command_config_option = click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=_load_command_config,
    help="a Kafka client properties file for a TLS or SASL listener: security.protocol,"
    " sasl.mechanism, sasl.jaas.config, ssl.truststore.location (PEM)...",
)


def bootstrap_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--bootstrap and --command-config: where the cluster is and how to reach it."""
    return _bootstrap(command_config_option(fn))


json_option = click.option("--json", "as_json", is_flag=True, help="print JSON")


@click.group()
def groups() -> None:
    """List, describe and delete consumer groups."""


@groups.command("list")
@bootstrap_option
@json_option
@click.option(
    "--state",
    "states",
    multiple=True,
    callback=lambda _ctx, _param, values: tuple(_state(v) for v in values),
    metavar="STATE",
    help=f"only groups in this state (repeatable): {', '.join(GROUP_STATES)}",
)
def list_groups(bootstrap: str, as_json: bool, states: tuple[str, ...], **_: Any) -> None:
    """List groups (every broker's: each lists the groups it coordinates)."""
    missed: list[tuple[str, int]] = []

    async def listing(admin: GroupAdmin) -> list[GroupListing]:
        found = await admin.list_groups(states)
        missed.extend(admin.unreachable)
        return found

    found = _run(bootstrap, listing)
    data = [
        {
            "group": g.group_id,
            "protocol_type": g.protocol_type,
            "state": g.state,
            "type": g.group_type,
        }
        for g in found
    ]
    rows = [(g.group_id, g.state, g.protocol_type or None, g.group_type) for g in found]
    _emit(as_json, data, table(["GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"], rows))
    for host, port in missed:
        # On stderr, so --json output stays parseable.
        click.echo(
            f"note: broker {host}:{port} did not answer: the groups it coordinates are not"
            " listed (a node that died is listed by the others until its lease runs out)",
            err=True,
        )


def _description_json(d: GroupDescription) -> dict[str, object]:
    described: dict[str, object] = {
        "group": d.group_id,
        "state": d.state,
        "protocol_type": d.protocol_type,
        "protocol": d.protocol,
        "coordinator": None
        if d.coordinator is None
        else {
            "node_id": d.coordinator.node_id,
            "host": d.coordinator.host,
            "port": d.coordinator.port,
        },
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "topics": m.topics,
                "assignment": m.assignment,
                **(
                    {
                        "member_epoch": m.member_epoch,
                        "target_assignment": m.target_assignment,
                        "protocol": m.protocol,
                    }
                    if d.group_type == "consumer"
                    else {}
                ),
            }
            for m in d.members
        ],
    }
    if d.group_type == "consumer":  # KIP-848: epochs, as kafka-consumer-groups.sh shows them
        described |= {
            "type": d.group_type,
            "group_epoch": d.group_epoch,
            "assignment_epoch": d.assignment_epoch,
        }
    return described


@groups.command("describe")
@click.argument("group")
@bootstrap_option
@json_option
def describe_group(group: str, bootstrap: str, as_json: bool, **_: Any) -> None:
    """Show a group's state, protocol and members with their assignments.

    Kafka's DescribeGroups does not report a classic group's generation or leader, so,
    like kafka-consumer-groups.sh, this does not show them.
    """

    async def both(admin: GroupAdmin) -> tuple[GroupDescription, list[PartitionOffsets]]:
        return await admin.describe_group(group), await admin.group_offsets(group)

    d, offsets = _run(bootstrap, both, group)
    if d.state == "Dead" and not d.members:
        # As kafka-consumer-groups.sh: say so, and fail.
        raise click.ClickException(f"Consumer group {group!r} does not exist.")
    if d.group_type == "consumer":  # KIP-848: the assignor, epochs and target assignments
        header = table(
            [
                "GROUP",
                "COORDINATOR",
                "STATE",
                "TYPE",
                "ASSIGNOR",
                "GROUP-EPOCH",
                "ASSIGNMENT-EPOCH",
                "MEMBERS",
            ],
            [
                (
                    d.group_id,
                    d.coordinator,
                    d.state,
                    d.group_type,
                    d.protocol,
                    d.group_epoch,
                    d.assignment_epoch,
                    len(d.members),
                )
            ],
        )
        members = table(
            [
                "MEMBER-ID",
                "INSTANCE-ID",
                "HOST",
                "CLIENT-ID",
                "PROTOCOL",
                "EPOCH",
                "ASSIGNMENT",
                "TARGET",
            ],
            [
                (
                    m.member_id,
                    m.group_instance_id,
                    m.host,
                    m.client_id,
                    m.protocol,
                    m.member_epoch,
                    _partitions(m.assignment),
                    _partitions(m.target_assignment),
                )
                for m in d.members
            ],
        )
        _emit(
            as_json,
            _with_lag(_description_json(d), offsets),
            header + ("\n\n" + members if d.members else "") + _lag_table(offsets),
        )
        return
    header = table(
        ["GROUP", "COORDINATOR", "STATE", "PROTOCOL-TYPE", "PROTOCOL", "MEMBERS"],
        [
            (
                d.group_id,
                d.coordinator,
                d.state,
                d.protocol_type or None,
                d.protocol or None,
                len(d.members),
            )
        ],
    )
    members = table(
        ["MEMBER-ID", "INSTANCE-ID", "HOST", "CLIENT-ID", "ASSIGNMENT"],
        [
            (m.member_id, m.group_instance_id, m.host, m.client_id, _partitions(m.assignment))
            for m in d.members
        ],
    )
    _emit(
        as_json,
        _with_lag(_description_json(d), offsets),
        header + ("\n\n" + members if d.members else "") + _lag_table(offsets),
    )


def _lag_table(rows: list[PartitionOffsets]) -> str:
    """The group's partitions with their LAG, as kafka-consumer-groups.sh --describe shows
    (log ends from ListOffsets: in front of an upstream, the upstream's)."""
    if not rows:
        return ""
    return "\n\n" + table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"],
        [(r.topic, r.partition, r.committed, r.log_end, r.lag) for r in rows],
    )


def _with_lag(data: dict[str, object], rows: list[PartitionOffsets]) -> dict[str, object]:
    data["offsets"] = [
        {
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.committed,
            "log_end_offset": r.log_end,
            "lag": r.lag,
        }
        for r in rows
    ]
    known = [r.lag for r in rows if r.lag is not None]
    data["lag"] = sum(known) if known else None
    return data


@groups.command("delete")
@click.argument("group")
@bootstrap_option
@json_option
def delete_group(group: str, bootstrap: str, as_json: bool, **_: Any) -> None:
    """Delete an Empty group and its committed offsets."""
    _run(bootstrap, lambda admin: admin.delete_group(group), group)
    _emit(as_json, {"group": group, "deleted": True}, f"Deleted group {group!r}.")


@click.group()
def offsets() -> None:
    """Read and reset committed offsets."""


@offsets.command("get")
@click.argument("group")
@bootstrap_option
@json_option
def get_offsets(group: str, bootstrap: str, as_json: bool, **_: Any) -> None:
    """Committed offsets of a group, with log-end offsets and lag."""

    async def offsets_of(admin: GroupAdmin) -> tuple[list[Any], bool]:
        rows = await admin.group_offsets(group)
        if rows:
            return rows, True
        d = await admin.describe_group(group)  # none: is there such a group at all?
        return rows, not (d.state == "Dead" and not d.members)

    rows, exists = _run(bootstrap, offsets_of, group)
    if not exists:
        # As groups describe (and kafka-consumer-groups.sh): say so, and fail.
        raise click.ClickException(f"Consumer group {group!r} does not exist.")
    data = [
        {
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.committed,
            "log_end_offset": r.log_end,
            "lag": r.lag,
            "metadata": r.metadata,
        }
        for r in rows
    ]
    text = table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "METADATA"],
        [(r.topic, r.partition, r.committed, r.log_end, r.lag, r.metadata or None) for r in rows],
    )
    _emit(as_json, data, text if rows else f"Group {group!r} has no committed offsets.")


@offsets.command("reset")
@click.argument("group")
@click.option("--topic", required=True, help="reset every partition of this topic")
@click.option("--to-earliest", is_flag=True, help="to each partition's earliest offset")
@click.option("--to-offset", type=click.IntRange(min=0), help="to this offset (clamped to range)")
@bootstrap_option
@json_option
def reset_offsets(
    group: str,
    topic: str,
    to_earliest: bool,
    to_offset: int | None,
    bootstrap: str,
    as_json: bool,
    **_: Any,
) -> None:
    """Reset a group's offsets for a topic; only while the group is Empty."""
    if to_earliest == (to_offset is not None):
        raise click.UsageError("give exactly one of --to-earliest and --to-offset N")
    done = _run(
        bootstrap,
        lambda admin: admin.reset_offsets(
            group, topic, to_earliest=to_earliest, to_offset=to_offset
        ),
        group,
    )
    data = [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(done.items())]
    text = table(
        ["TOPIC", "PARTITION", "NEW-OFFSET"], [(t, p, o) for (t, p), o in sorted(done.items())]
    )
    _emit(as_json, data, text)
    clamped = sorted(p for (_t, p), o in done.items() if to_offset is not None and o != to_offset)
    if clamped:
        # Said on stderr, so --json output stays parseable.
        click.echo(
            f"note: --to-offset {to_offset} is outside the range of partition(s)"
            f" {', '.join(map(str, clamped))} of {topic}: clamped to the nearest end",
            err=True,
        )
