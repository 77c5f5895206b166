"""The dispatcher: a decoded request in, its handler's ``Outcome`` out. Sans-IO.

Handlers are registered by request class, so each receives its own typed body; the API key
and the advertised version range come from the class's message declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsResponseApiVersion
from protocol.frames import Request
from protocol.schema import Struct

from ..connection_context import ConnectionContext
from ..node import Node
from .outcome import Outcome

Req = TypeVar("Req", bound=Struct)

#: A handler: (node, typed request body, request version, connection) -> outcome.
Handler = Callable[[Node, Req, int, ConnectionContext], Outcome[Any]]


def api_key_of(request_type: type[Struct]) -> ApiKey:
    assert request_type.kafka is not None and request_type.kafka.api_key is not None
    return ApiKey(request_type.kafka.api_key)


class Dispatcher:
    def __init__(self, node: Node) -> None:
        self.node = node
        self._routes: dict[int, Handler[Any]] = {}

    def route(self, request_type: type[Req], handler: Handler[Req]) -> None:
        self._routes[api_key_of(request_type)] = handler
        self.node.api_versions = [
            ApiVersionsResponseApiVersion(
                api_key=key,
                min_version=BY_KEY[key].min_version,
                max_version=BY_KEY[key].max_version,
            )
            for key in sorted(self._routes)
        ]

    def supports(self, api_key: int) -> bool:
        return api_key in self._routes

    def dispatch(self, request: Request, conn: ConnectionContext) -> Outcome[Any]:
        return self._routes[request.api.key](self.node, request.body, request.version, conn)
