"""Who is asking, and at which address the browser thinks it is: allowed hosts, the public
origin and a trusted reverse proxy.

- **Allowed hosts** (Django's ALLOWED_HOSTS): a request whose Host header names another
  host is refused (400). Without it, a page on ``http://rebind.example:PORT/`` whose name
  is made to resolve to 127.0.0.1 (DNS rebinding) reads the console with the browser's
  help, and its Origin check passes since Origin equals the Host it was sent to. Default:
  the listen address, ``localhost`` (and its subdomains), 127.0.0.1 and ::1, plus the
  public origin's host; listening on all addresses, also this machine's names and any IP
  address (an address is no name an attacker can make resolve elsewhere).
- **Public origin** (``--http-public-origin https://console.example.com``): the origin the
  browser is on behind a TLS proxy; logins and actions must come from it. Without it the
  origin is the request's scheme (from a trusted proxy's header, else http) and Host.
- **Trusted proxies** (``--http-trusted-proxy ADDRESS``): only from these addresses are
  ``X-Forwarded-For``/``X-Forwarded-Proto`` or ``Forwarded`` believed, for the client's
  address (failed-login limiter, ACL host, logs) and the scheme (Secure cookie, origin).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from aiohttp import web

from ..security.config import WILDCARD_HOSTS
from .settings import ConsoleSettings

LOCAL_NAMES = (".localhost", "localhost", "127.0.0.1", "::1")


def host_name(host: str) -> str:
    """The name of a Host header value, without its port, lower case (IPv6 unbracketed)."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() and ":" not in name else host


def _matches(name: str, pattern: str) -> bool:
    """Django's rules: "*" is any host, ".example.com" is it and its subdomains."""
    if pattern == "*":
        return True
    if pattern.startswith("."):
        return name == pattern[1:] or name.endswith(pattern)
    return name == pattern


def _address(value: str) -> str | None:
    """An address from a forwarded header element ("1.2.3.4", "[::1]:80", '"_hidden"')."""
    value = value.strip().strip('"')
    if value.startswith("["):
        value = value[1 : value.find("]")]
    elif value.count(":") == 1:
        value = value.split(":")[0]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _forwarded(header: str) -> list[dict[str, str]]:
    """RFC 7239 ``Forwarded``: one dict per element, keys lower case."""
    out = []
    for element in header.split(","):
        pairs = {}
        for pair in element.split(";"):
            key, eq, value = pair.partition("=")
            if eq:
                pairs[key.strip().lower()] = value.strip().strip('"')
        out.append(pairs)
    return out


class Addressing:
    def __init__(self, settings: ConsoleSettings) -> None:
        self.public_origin = settings.public_origin
        self.trusted = frozenset(a for a in map(_address, settings.trusted_proxies) if a)
        allowed = set(settings.allowed_hosts)
        #: Listening on every address, by default: any Host that is an IP address.
        self.any_address = False
        if not allowed:
            allowed.update(LOCAL_NAMES)
            listen_host = settings.listen[0] if settings.listen else ""
            if listen_host in WILDCARD_HOSTS:  # the machine's own names, as it is bound to all
                allowed.update({socket.gethostname().lower(), socket.getfqdn().lower()})
                self.any_address = True
            elif listen_host:
                allowed.add(host_name(listen_host))
        if self.public_origin:
            allowed.add(host_name(urlsplit(self.public_origin).netloc))
        self.allowed_hosts = frozenset(allowed)

    def host_allowed(self, request: web.BaseRequest) -> bool:
        host = request.headers.get("Host")
        if host is None:
            return False
        name = host_name(host)
        if self.any_address and _address(name) is not None:
            return True
        return any(_matches(name, p) for p in self.allowed_hosts)

    def _via_proxy(self, request: web.BaseRequest) -> bool:
        peer = _address(request.remote or "")
        return peer is not None and peer in self.trusted

    def client_address(self, request: web.BaseRequest) -> str:
        """The client's address: the peer's, or, from a trusted proxy, the nearest address
        in its forwarded chain that is not itself a trusted proxy."""
        peer = request.remote or "unknown"
        if not self._via_proxy(request):
            return peer
        chain: list[str | None]
        if "Forwarded" in request.headers:
            chain = [_address(e.get("for", "")) for e in _forwarded(request.headers["Forwarded"])]
        else:
            chain = [_address(a) for a in request.headers.get("X-Forwarded-For", "").split(",")]
        for address in reversed(chain):
            if address is None:
                return peer  # a hop that cannot be read: the proxy is what is known
            if address not in self.trusted:
                return address
        return peer

    def scheme(self, request: web.BaseRequest) -> str:
        """http or https as the browser sees it."""
        if self.public_origin:
            return urlsplit(self.public_origin).scheme
        if self._via_proxy(request):
            if "Forwarded" in request.headers:
                proto = _forwarded(request.headers["Forwarded"])[-1].get("proto", "")
            else:
                proto = request.headers.get("X-Forwarded-Proto", "").split(",")[-1]
            if proto.strip().lower() in ("http", "https"):
                return proto.strip().lower()
        return request.scheme

    def origin(self, request: web.BaseRequest) -> str:
        """The origin the browser is on."""
        if self.public_origin:
            return self.public_origin
        return f"{self.scheme(request)}://{request.host.lower()}"

    def same_origin(self, request: web.BaseRequest) -> bool:
        """Whether a state-changing request comes from the console's own pages: its Origin
        (browsers send it with every POST) is the console's. A request without one is not a
        browser's cross-site request (a form or script elsewhere always carries it)."""
        origin = request.headers.get("Origin")
        return origin is None or origin.lower() == self.origin(request)
