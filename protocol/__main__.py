"""``python -m protocol``: decode captured Kafka bytes to JSON, or encode JSON to bytes.

    python -m protocol decode --api JoinGroup --version 7 --request HEX
    python -m protocol encode --api JoinGroup --version 7 --request JSON
    python -m protocol decode --api Heartbeat --version 4 --response --with-header HEX

Without ``--with-header`` the hex is the message body alone; with it, a whole frame: the
int32 size, the header and the body, and the JSON is ``{"header": ..., "body": ...}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from . import codec
from .apis import BY_NAME, Api
from .errors import DecodeError, EncodeError
from .headers import RequestHeader, ResponseHeader
from .jsonio import from_json, to_json
from .schema import Struct, is_flexible
from .structs import build_struct


def _api(name: str) -> Api:
    api = BY_NAME.get(name)
    if api is None:
        raise click.BadParameter(f"unknown API {name!r}; one of: {', '.join(sorted(BY_NAME))}")
    return api


def _kstruct(cls: type[Struct], version: int) -> Any:
    return build_struct(cls, version, is_flexible(cls, version))


def _parts(api: Api, version: int, response: bool) -> tuple[type[Struct], type[Struct], int]:
    if not api.supports(version):
        raise click.BadParameter(
            f"{api.name} supports versions {api.min_version}-{api.max_version}"
        )
    if response:
        return api.response, ResponseHeader, api.response_header_version(version)
    return api.request, RequestHeader, api.request_header_version(version)


_common = [
    click.option("--api", "api_name", required=True, help="API name, e.g. JoinGroup"),
    click.option("--version", type=int, required=True, help="API version"),
    click.option("--request/--response", "is_request", default=True, help="message direction"),
    click.option("--with-header", is_flag=True, help="input/output is a whole size-prefixed frame"),
]


def _with_common(f: Any) -> Any:
    for option in reversed(_common):
        f = option(f)
    return f


@click.group()
def main() -> None:
    """Decode and encode Kafka protocol messages."""


@main.command()
@_with_common
@click.argument("hex_bytes")
def decode(
    api_name: str, version: int, is_request: bool, with_header: bool, hex_bytes: str
) -> None:
    """Print the message in HEX_BYTES as JSON."""
    api = _api(api_name)
    cls, header_cls, header_version = _parts(api, version, not is_request)
    try:
        data = bytes.fromhex(hex_bytes.strip())
        if with_header:
            if len(data) < 4 or int.from_bytes(data[:4], "big", signed=True) != len(data) - 4:
                raise DecodeError("frame size prefix does not match the data")
            header, offset = codec.read(header_cls, data[4:], 0, header_version)
            body = codec.decode(cls, data[4 + offset :], version)
            out: Any = {
                "header": to_json(header, _kstruct(header_cls, header_version)),
                "body": to_json(body, _kstruct(cls, version)),
            }
        else:
            out = to_json(codec.decode(cls, data, version), _kstruct(cls, version))
    except (DecodeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(out, indent=2))


@main.command()
@_with_common
@click.argument("json_text")
def encode(
    api_name: str, version: int, is_request: bool, with_header: bool, json_text: str
) -> None:
    """Print the message in JSON_TEXT (or - for stdin) as hex."""
    api = _api(api_name)
    cls, header_cls, header_version = _parts(api, version, not is_request)
    text = sys.stdin.read() if json_text == "-" else json_text
    try:
        value = json.loads(text)
        if with_header:
            w = bytearray(4)
            codec.write(
                from_json(value["header"], _kstruct(header_cls, header_version)), header_version, w
            )
            codec.write(from_json(value["body"], _kstruct(cls, version)), version, w)
            w[:4] = (len(w) - 4).to_bytes(4, "big")
            out = bytes(w)
        else:
            out = codec.encode(from_json(value, _kstruct(cls, version)), version)
    except (DecodeError, EncodeError, ValueError, KeyError, TypeError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(out.hex())


if __name__ == "__main__":
    main()
