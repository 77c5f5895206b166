"""The dispatcher: a decoded request in, its handler's ``Outcome`` out. Sans-IO.

Handlers are registered by request class, so each receives its own typed body; the API key
and the advertised version range come from the class's message declaration. A group API is
admitted first (``admission``: the group's ACL, then its coordinator), by its row of the
admission table; a route naming groups that has no row is refused at registration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsResponseApiVersion
from protocol.errors import ErrorCode
from protocol.frames import Request
from protocol.schema import Struct, field_specs

from . import admission
from .admission import Answer, Route
from .connection_context import ConnectionContext
from .node import Node
from .outcome import Outcome

Req = TypeVar("Req", bound=Struct)

#: A handler: (node, typed request body, request version, connection) -> outcome.
Handler = Callable[[Node, Req, int, ConnectionContext], Outcome[Any]]
#: A batch group API's handler: as ``Handler``, with the groups admission refused (group
#: id -> its code), which it answers each with its code.
EachHandler = Callable[[Node, Req, int, ConnectionContext, Mapping[str, int]], Outcome[Any]]
#: A one-group API's answer to a refusal: (request body, version, code) -> response.
Refuse = Callable[[Req, int, ErrorCode], Any]


def api_key_of(request_type: type[Struct]) -> ApiKey:
    assert request_type.kafka is not None and request_type.kafka.api_key is not None
    return ApiKey(request_type.kafka.api_key)


#: What admission refuses when there is nothing to check (no ACLs, one node).
NONE_REFUSED: Mapping[str, int] = MappingProxyType({})


class _AdmitOne:
    """A one-group API behind its admission: a refusal is answered without the handler."""

    __slots__ = ("handler", "refuse", "route")

    def __init__(self, route: Route, handler: Handler[Any], refuse: Refuse[Any]) -> None:
        self.route, self.handler, self.refuse = route, handler, refuse

    def __call__(self, node: Node, body: Any, version: int, conn: ConnectionContext) -> Any:
        if admission.checks(node):
            route = self.route
            assert route.group_ids is not None
            (group_id,) = route.group_ids(body, version)
            code = admission.refusal(node, conn.principal, conn.client_host, route, group_id, body)
            if code is not None:
                return Outcome(self.refuse(body, version, code))
        return self.handler(node, body, version, conn)


class _AdmitEach:
    """A batch group API: told which of its groups admission refused."""

    __slots__ = ("handler", "route")

    def __init__(self, route: Route, handler: EachHandler[Any]) -> None:
        self.route, self.handler = route, handler

    def __call__(self, node: Node, body: Any, version: int, conn: ConnectionContext) -> Any:
        refused = (
            admission.refusals(node, conn.principal, conn.client_host, self.route, body, version)
            if admission.checks(node)
            else NONE_REFUSED
        )
        return self.handler(node, body, version, conn, refused)


class Dispatcher:
    def __init__(self, node: Node) -> None:
        self.node = node
        self._routes: dict[int, Handler[Any]] = {}

    def route(
        self, request_type: type[Req], handler: Handler[Req], refuse: Refuse[Req] | None = None
    ) -> None:
        """Serve ``request_type`` with ``handler``; a one-group API gives ``refuse``, its
        answer to a refusal, and a listing (ListGroups) applies its admission itself."""
        key = api_key_of(request_type)
        row = admission.BY_API_KEY.get(key)
        if row is None:
            if names_groups(request_type):
                raise LookupError(f"{request_type.__name__} names groups: it needs admission")
            self._add(key, handler)
        elif row.answer is Answer.ONE:
            if refuse is None:
                raise ValueError(f"{row.name} is admitted per request: it needs a refusal")
            self._add(key, _AdmitOne(row, handler, refuse))
        elif row.answer is Answer.LISTED:
            self._add(key, handler)
        else:
            raise ValueError(f"{row.name} answers each group: route it with route_each")

    def route_each(self, request_type: type[Req], handler: EachHandler[Req]) -> None:
        """Serve a batch group API: ``handler`` is told which of its groups were refused."""
        key = api_key_of(request_type)
        row = admission.BY_API_KEY.get(key)
        if row is None or row.answer is not Answer.EACH:
            raise ValueError(f"{request_type.__name__} is not a batch group API")
        self._add(key, _AdmitEach(row, handler))

    def _add(self, key: int, handler: Handler[Any]) -> None:
        self._routes[key] = handler
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


#: Request fields that name groups ("resources": typed resources, a group among them).
GROUP_FIELDS = frozenset({"group_id", "groups", "group_ids", "groups_names", "resources"})


def names_groups(request_type: type[Struct]) -> bool:
    """Whether a request names the groups it acts on (at any version)."""
    return any(name in GROUP_FIELDS for name, _spec in field_specs(request_type))
