"""The console's HTTP server: aiohttp on the daemon's own event loop, Jinja2 pages.

Why aiohttp: it is an asyncio server that runs on a loop someone else owns (``AppRunner``
and ``TCPSite`` start it inside the running daemon, uvloop included) with no second thread
or process, so a handler reads the state machine directly, between two requests of the
Kafka listeners; and it has streaming responses for server-sent events and a test client.

Routes (docs/console.md): pages ``/``, ``/groups``, ``/group?id=``, ``/topics``, ``/login``;
the JSON API under ``/api/``; live updates at ``/api/stream`` (server-sent events); assets
under ``/static/`` (every one ships in this package: the pages load nothing from elsewhere).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import jinja2
import structlog
from aiohttp import web

from ..group.consumer.config import DEFAULT_ASSIGNOR
from ..handlers.node import Node
from ..security.config import ANONYMOUS
from ..security.sasl import FailedLoginLimiter
from ..shared.errors import StartupError
from ..store.postgres import PostgresStore
from . import actions, filters, restricted, sse, views
from .activity import Activity
from .addressing import Addressing
from .auth import COOKIE, SESSION_S, Sessions, check_password
from .cluster_view import ClusterGroups, console_url
from .guard import GuardedSite, HttpGuard, ServerLog, hide_server_version
from .settings import ConsoleSettings
from .streams import RenderBudget, StreamSlots
from .views import ConsoleState, Viewer

if TYPE_CHECKING:
    from ..shell.runtime import Runtime

log = structlog.get_logger("console")

#: How often a live stream looks for changes; it re-renders only when an event arrived or
#: STREAM_REFRESH_S passed (heartbeat ages move without events), and sends only what changed.
STREAM_POLL_S = 0.25
STREAM_REFRESH_S = 2.0
#: A stream waits at least this many times its last render before the next (a groups page
#: of 10,000 groups sorted by last rebalance takes ~30 ms: it updates 3 times a second at
#: most); all streams together also share one budget of loop time (streams.RenderBudget).
RENDER_BUDGET = 10
#: A comment line this often keeps proxies from closing a quiet stream and finds closed ones.
STREAM_KEEPALIVE_S = 15.0
#: Pages load nothing but the daemon's own assets.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
VIEWS = ("overview", "groups", "group", "topics", "analytics")


def _package_dir(name: str) -> Path:
    return Path(str(resources.files("coordinator.console") / name))


class Console:
    """The console of one daemon: ``await start()``, then ``await close()``."""

    def __init__(
        self, settings: ConsoleSettings, runtime: Runtime, connections: Callable[[], int]
    ) -> None:
        self.settings = settings
        self.activity = Activity(runtime.clock.now_ms)
        runtime.event_sinks.append(self.activity)
        self.state = ConsoleState(
            runtime.node, self.activity, connections, settings.admin, settings.analytics
        )
        if isinstance(runtime.store, PostgresStore):  # a cluster: every node's groups
            self.state.cluster = ClusterGroups(runtime.store, DEFAULT_ASSIGNOR)
        self.carry_out = runtime.carry_out
        self.runtime = runtime
        self.sessions = Sessions(settings.max_sessions_per_user)
        self.guard = HttpGuard(settings)
        if runtime.metrics is not None:
            self.guard.on_hit = runtime.metrics.limit_hit
        hide_server_version()
        self.addressing = Addressing(settings)
        #: The console's own failed-login limiter: its failures lock no Kafka login out.
        security = runtime.node.security.settings
        self.login_limiter = FailedLoginLimiter(
            security.max_failed_authentications, security.failed_authentication_window_ms
        )
        self.closing = asyncio.Event()
        self.stream_slots = StreamSlots(settings.max_streams, settings.max_streams_per_client)
        self.budget = RenderBudget(settings.stream_budget)
        self._stream_refusals_logged: dict[str, float] = {}
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_package_dir("templates")),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        filters.install(self.templates)
        self.app = build_app(self)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        #: How other nodes' consoles link to this one (set once listening).
        self.url: str | None = None

    @property
    def node(self) -> Node:
        return self.state.node

    async def start(self) -> None:
        assert self.settings.listen is not None
        host, port = self.settings.listen
        runner = web.AppRunner(
            self.app,
            access_log=None,
            shutdown_timeout=1.0,
            keepalive_timeout=self.settings.idle_timeout_ms / 1000,
            logger=ServerLog(),
        )
        await runner.setup()
        site = GuardedSite(runner, host, port, self.guard)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise StartupError(
                f"cannot listen on {host}:{port} (--http-listen): {exc.strerror or exc}"
            ) from None
        self._runner = runner
        self.guard.start()
        self.port = int(runner.addresses[0][1])  # port 0 asks for any
        self.url = console_url(host, self.port)
        log.info(
            "console",
            url=f"http://{host}:{self.port}/",
            admin=self.settings.admin,
            login=self.node.security.acls_enabled,
        )

    async def close(self) -> None:
        self.closing.set()
        await self.guard.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- who is asking -----------------------------------------------------------------------

    def viewer(self, request: web.Request) -> Viewer | None:
        """The request's principal, or None when it must log in first (ACLs enabled)."""
        host = f"/{self.addressing.client_address(request)}"
        if not self.node.security.acls_enabled:
            return Viewer(ANONYMOUS, host)
        principal = self.sessions.principal(request.cookies.get(COOKIE))
        return None if principal is None else Viewer(principal, host)

    @property
    def streams(self) -> int:
        """Live pages open now."""
        return len(self.stream_slots)

    def stream_client(self, request: web.Request) -> str:
        """Whose streams these are: the session (with ACLs), else the client's address."""
        token = request.cookies.get(COOKIE) if self.node.security.acls_enabled else None
        return f"session:{token}" if token else self.addressing.client_address(request)

    def log_stream_refusal(self, client: str, why: str) -> None:
        now = time.monotonic()
        if now - self._stream_refusals_logged.get(why, -60.0) >= 10:
            self._stream_refusals_logged[why] = now
            shown = "a session" if client.startswith("session:") else client
            log.warning("console live page refused", client=shown, reason=why)

    # -- rendering ---------------------------------------------------------------------------

    async def fresh(self) -> None:
        """In a cluster, the other nodes' groups read again if the last read is old."""
        if self.state.cluster is not None:
            await self.state.cluster.refresh()

    def data(self, view: str, query: Any, viewer: Viewer) -> dict[str, Any] | None:
        if view == "overview":
            return restricted.overview_for(self.state, viewer, views.overview(self.state, viewer))
        if view == "groups":
            return views.groups_page(
                self.state,
                viewer,
                q=query.get("q", ""),
                group_state=query.get("state", ""),
                group_type=query.get("type", ""),
                sort=query.get("sort", "id"),
                order=query.get("order", "asc"),
                page=_int(query.get("page"), 1),
                page_size=_int(query.get("page_size"), views.DEFAULT_PAGE_SIZE),
            )
        if view == "group":
            return views.group_detail(self.state, viewer, query.get("id", ""))
        if view == "topics":
            return views.topics(self.state, viewer)
        if view == "analytics":
            return views.analytics(self.state, viewer)
        return None

    def render(self, template: str, **context: Any) -> str:
        return self.templates.get_template(template).render(**context)

    def live_html(self, view: str, data: dict[str, Any], query: Any) -> str:
        page_query = {k: v for k, v in query.items() if k not in ("view", "format")}
        return self.render(f"_{view}.html", d=data, query=page_query, qs=_qs)


STATE_KEY: web.AppKey[Console] = web.AppKey("console")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _qs(base: dict[str, str], **changes: object) -> str:
    """A query string: ``base`` with ``changes`` (None removes a key)."""
    merged = {k: v for k, v in base.items() if v}
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = str(value)
    return urlencode(merged)


def _console(request: web.Request) -> Console:
    return request.app[STATE_KEY]


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _allowed_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not _console(request).addressing.host_allowed(request):
        # Django answers a disallowed host 400 too; the name is not echoed back.
        return web.Response(
            status=400, text="this console does not answer to that Host (--http-allowed-host)\n"
        )
    return await handler(request)


async def _headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """On every answer, redirects and errors included; no server version either."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Server"] = "group-coordinator"


def _json(data: object, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda o: json.dumps(o, default=str))


def _login_needed(request: web.Request) -> web.StreamResponse:
    if request.path.startswith("/api/") or request.path == "/metrics":
        return _json({"error": "log in first (POST /login)"}, 401)
    target = request.path_qs
    raise web.HTTPSeeOther(f"/login?{urlencode({'next': target})}")


# -- pages ----------------------------------------------------------------------------------


async def _page(request: web.Request, view: str, title: str) -> web.StreamResponse:
    console = _console(request)
    viewer = console.viewer(request)
    if viewer is None:
        return _login_needed(request)
    await console.fresh()
    data = console.data(view, request.query, viewer)
    if data is None:
        return _not_here(console, request, viewer)
    stream = f"/api/stream?{urlencode({**request.query, 'view': view, 'format': 'html'})}"
    body = console.render(
        f"{view}.html",
        title=title,
        view=view,
        live=console.live_html(view, data, request.query),
        stream=stream,
        query=dict(request.query),
        viewer=viewer,
        login=console.node.security.acls_enabled,
        admin=console.settings.admin,
        states=views.STATES + views.CONSUMER_STATES,
        types=views.TYPES,
    )
    return web.Response(text=body, content_type="text/html")


def _not_here(console: Console, request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """A group this node does not show: in a cluster, a page naming and linking the node
    that coordinates it; else (or when it exists nowhere) a 404 page saying so."""
    group_id = request.query.get("id", "")
    where = views.group_elsewhere(console.state, viewer, group_id)
    found = where is not None and where["exists"]
    # A group that exists nowhere is not named back (the id is the requester's text).
    body = console.render(
        "elsewhere.html",
        title=f"Group {group_id}" if found else "No such group",
        view="group",
        d=where,
        stream=None,
        viewer=viewer,
        login=console.node.security.acls_enabled,
    )
    found = found and where is not None and where["coordinator"] is not None
    return web.Response(text=body, content_type="text/html", status=200 if found else 404)


async def overview_page(request: web.Request) -> web.StreamResponse:
    return await _page(request, "overview", "Overview")


async def groups_page(request: web.Request) -> web.StreamResponse:
    return await _page(request, "groups", "Groups")


async def group_page(request: web.Request) -> web.StreamResponse:
    return await _page(request, "group", f"Group {request.query.get('id', '')}")


async def topics_page(request: web.Request) -> web.StreamResponse:
    return await _page(request, "topics", "Topics")


async def analytics_page(request: web.Request) -> web.StreamResponse:
    return await _page(request, "analytics", "Analysis")


async def login_form(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    body = console.render(
        "login.html",
        title="Log in",
        next=_safe_next(request.query.get("next")),
        error=request.query.get("error"),
        login=True,
        viewer=None,
        view="login",
    )
    return web.Response(text=body, content_type="text/html")


def _safe_next(target: str | None) -> str:
    """Only a path on this server. Checked as a browser will read it: browsers drop tabs
    and line breaks from a URL and read a backslash as a slash, so "/\t/evil.example" and
    "/\\evil.example" are "//evil.example", another site."""
    if not target:
        return "/"
    target = re.sub(r"[\t\r\n]", "", target).replace("\\", "/")
    parts = urlsplit(target)
    if not target.startswith("/") or target.startswith("//") or parts.scheme or parts.netloc:
        return "/"
    return target


async def login(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    if not console.addressing.same_origin(request):
        return web.Response(status=403, text="a login from another site is refused\n")
    form = await request.post()
    username, password = str(form.get("username", "")), str(form.get("password", ""))
    target = _safe_next(str(form.get("next", "/")))
    address = console.addressing.client_address(request)
    ok = bool(username) and await check_password(
        console.node.security,
        console.login_limiter,
        address,
        username,
        password,
        console.node.now_ms(),
    )
    if not ok:
        log.info("console login failed", user=username, peer=address)
        raise web.HTTPSeeOther(
            f"/login?{urlencode({'next': target, 'error': 'wrong user name or password'})}"
        )
    log.info("console login", user=username, peer=address)
    response = web.HTTPSeeOther(target)
    response.set_cookie(
        COOKIE,
        console.sessions.start(username),
        max_age=SESSION_S,
        httponly=True,
        secure=console.addressing.scheme(request) == "https",
        samesite="Strict",
        path="/",
    )
    raise response


async def logout(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    console.sessions.end(request.cookies.get(COOKIE))
    response = web.HTTPSeeOther("/login")
    response.del_cookie(COOKIE, path="/")
    raise response


# -- the JSON API ---------------------------------------------------------------------------


def _api(view: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        console = _console(request)
        viewer = console.viewer(request)
        if viewer is None:
            return _login_needed(request)
        query: Any = request.query
        if view == "group":
            query = {"id": request.match_info["group"]}
        await console.fresh()
        data = console.data(view, query, viewer)
        if data is None:
            where = views.group_elsewhere(console.state, viewer, query.get("id", ""))
            return _json({"error": f"no group {query.get('id')!r} here", **(where or {})}, 404)
        return _json(data)

    return handler


async def api_events(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    viewer = console.viewer(request)
    if viewer is None:
        return _login_needed(request)
    limit = min(max(_int(request.query.get("limit"), 100), 1), 1000)
    return _json({"events": views.recent_events(console.state, viewer, limit)})


async def stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: the view's data (JSON) or its live HTML, each time it changes."""
    console = _console(request)
    viewer = console.viewer(request)
    if viewer is None:
        return _login_needed(request)
    view = request.query.get("view", "overview")
    if view not in VIEWS:
        return _json({"error": f"view is one of {', '.join(VIEWS)}"}, 400)
    client = console.stream_client(request)
    refused = console.stream_slots.refusal(client)
    if refused is not None:
        status, why = refused
        console.log_stream_refusal(client, why)
        if console.runtime.metrics is not None:
            console.runtime.metrics.limit_hit(
                "http_max_streams" if status == 503 else "http_max_streams_per_client"
            )
        return _json({"error": why}, status)
    as_html = request.query.get("format") == "html"
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    console.stream_slots.take(client)
    try:
        await _push(console, request, response, view, as_html)
    except ConnectionResetError:
        pass  # the page was closed
    finally:
        console.stream_slots.give_back(client)
    return response


async def _push(
    console: Console,
    request: web.Request,
    response: web.StreamResponse,
    view: str,
    as_html: bool,
) -> None:
    loop = asyncio.get_running_loop()
    sent: bytes | None = None
    seen_version = -1
    rendered_at = written_at = 0.0
    render_s = 0.0  # how long the last render held the loop
    login = console.node.security.acls_enabled  # what a page shows depends on who asks
    await response.write(b"retry: 1000\n\n")
    while not console.closing.is_set():
        viewer = console.viewer(request)  # a session that ended (logout) ends its streams
        transport = request.transport
        if viewer is None or transport is None or transport.is_closing():
            return
        now = loop.time()
        changed = console.activity.version != seen_version
        due = now - rendered_at >= max(STREAM_POLL_S, RENDER_BUDGET * render_s)
        if due and (changed or now - rendered_at >= STREAM_REFRESH_S):
            seen_version = console.activity.version
            await console.fresh()
            # All pages share one budget of loop time: this may wait for its turn, or take
            # a render of the same page for the same viewer made since it saw the change.
            event, render_s = await console.budget.render(
                lambda: _event(console, request, view, as_html),
                key=(tuple(sorted(request.query.items())), viewer if login else None),
                newer_than=now,
            )
            now = rendered_at = loop.time()
            if event is None:
                return  # logged out while waiting
            if event != sent:
                sent, written_at = event, now
                await response.write(event)
                # Sending counts against the pages' budget too (200 pages of 100 kB each).
                console.budget.charge(min(loop.time() - now, STREAM_POLL_S))
        if now - written_at >= STREAM_KEEPALIVE_S:
            written_at = now
            await response.write(b": still here\n\n")  # finds pages closed without a word
        await asyncio.sleep(STREAM_POLL_S)  # a timer, not a task per wait: 200 pages poll


def _event(console: Console, request: web.Request, view: str, as_html: bool) -> bytes | None:
    """The view as the stream's next event (None: logged out, or the page closed, while
    this waited for its turn)."""
    viewer = console.viewer(request)
    transport = request.transport
    if viewer is None or transport is None or transport.is_closing():
        return None
    data = console.data(view, request.query, viewer)
    if data is None:
        payload = json.dumps({"gone": True})
    elif as_html:
        payload = console.live_html(view, data, request.query)
    else:
        payload = json.dumps(data, default=str)
    return sse.event("update", payload)


async def metrics(request: web.Request) -> web.StreamResponse:
    """Prometheus metrics, as ``--metrics-listen`` serves them (when that is on); with
    ACLs, to a logged-in user who may describe the cluster only (they count every group;
    its own port is the place for an unattended scraper)."""
    console = _console(request)
    viewer = console.viewer(request)
    if viewer is None:
        return _login_needed(request)
    if not viewer.sees_all_groups(console.node):
        return _json({"error": f"{viewer.principal} may not DESCRIBE the cluster"}, 403)
    found = console.runtime.metrics
    if found is None:
        return web.Response(status=404, text="metrics are off: start with --metrics-listen\n")
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    # Off the loop: the scrape-time gauges ask the loop for a snapshot and wait for it.
    body = await asyncio.to_thread(generate_latest, found.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


# -- actions --------------------------------------------------------------------------------


async def action(request: web.Request) -> web.StreamResponse:
    console = _console(request)
    if not console.settings.admin:
        return _json({"error": "actions are off: start the daemon with --http-admin"}, 403)
    viewer = console.viewer(request)
    if viewer is None:
        return _login_needed(request)
    # A cross-site form cannot send JSON; a cross-site script is stopped by the Origin check.
    if not console.addressing.same_origin(request):
        return _json({"error": "cross-origin actions are refused"}, 403)
    if request.content_type != "application/json":
        return _json({"error": "send the action as application/json"}, 415)
    try:
        body = await request.json()
        if not isinstance(body, dict):
            raise ValueError("not an object")
        group_id = str(body["group"])
    except (ValueError, KeyError) as exc:
        return _json({"error": f"expected a JSON object with a group: {exc}"}, 400)
    node, carry_out = console.node, console.carry_out
    name = request.match_info["action"]
    try:
        if name == "delete-group":
            await actions.delete_group(node, carry_out, viewer, group_id)
            result: dict[str, object] = {"deleted": group_id}
        elif name == "reset-offsets":
            done = await actions.reset_offsets(
                node,
                carry_out,
                viewer,
                group_id,
                str(body.get("topic", "")),
                _int(str(body.get("offset", 0)), 0),
            )
            result = {"group": group_id, "topic": body.get("topic"), "offsets": done}
        elif name == "remove-member":
            instance = str(body.get("instance_id", ""))
            await actions.remove_static_member(node, carry_out, viewer, group_id, instance)
            result = {"group": group_id, "removed": instance}
        else:
            return _json({"error": f"no action {name!r}"}, 404)
    except actions.ActionError as exc:
        return _json({"error": exc.message}, exc.status)
    log.info("console action", action=name, group=group_id, by=viewer.principal)
    return _json(result)


def build_app(console: Console) -> web.Application:
    app = web.Application(
        middlewares=[console.guard.middleware, _allowed_host], client_max_size=64 * 1024
    )
    app[STATE_KEY] = console
    app.on_response_prepare.append(_headers)

    async def on_shutdown(_app: web.Application) -> None:
        console.closing.set()

    app.on_shutdown.append(on_shutdown)
    app.router.add_get("/", overview_page)
    app.router.add_get("/groups", groups_page)
    app.router.add_get("/group", group_page)
    app.router.add_get("/topics", topics_page)
    app.router.add_get("/analytics", analytics_page)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/api/overview", _api("overview"))
    app.router.add_get("/api/groups", _api("groups"))
    app.router.add_get("/api/groups/{group:.+}", _api("group"))
    app.router.add_get("/api/topics", _api("topics"))
    app.router.add_get("/api/analytics", _api("analytics"))
    app.router.add_get("/api/events", api_events)
    app.router.add_get("/api/stream", stream)
    app.router.add_post("/api/actions/{action}", action)
    app.router.add_get("/metrics", metrics)
    app.router.add_static("/static", _package_dir("static"), append_version=False)
    return app
