"""The console behind nginx with TLS, configured as docs/examples/nginx-console.conf says
(that very file, ports and paths replaced): the live pages follow through the proxy and
the admin actions are accepted from the public https:// origin. Debian's nginx on
127.0.0.1; skipped, saying so, when it is missing."""

from __future__ import annotations

import os
import ssl
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.pki import make_pki

from .browser import chromium
from .conftest import Daemon, free_port, wait_until
from .test_console_browser import SHOWN_MS, TOPIC, console_daemon, members

pytestmark = pytest.mark.integration

NGINX = "/usr/sbin/nginx"
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "nginx-console.conf"


def nginx_conf(tmp: Path, port: int, upstream: str, cert: Path, key: Path) -> Path:
    server = (
        EXAMPLE.read_text()
        .replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
        .replace("http://127.0.0.1:8080", upstream)
        .replace("/etc/ssl/console.example.com.pem", str(cert))
        .replace("/etc/ssl/private/console.example.com.key", str(key))
    )
    temp = "\n".join(
        f"    {kind}_temp_path {tmp / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"pid {tmp / 'nginx.pid'};\n"
        f"error_log {tmp / 'error.log'};\n"
        # As root, workers would drop to "nobody", who cannot read this test's directory.
        + ("user root;\n" if os.geteuid() == 0 else "")
        + "events {}\n"
        + "http {\n    access_log off;\n"
        + temp
        + "\n"
        + server
        + "\n}\n"
    )
    return conf


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Callable[[str, int], str]]:
    """Start nginx on a port in front of an upstream URL; gives the public https:// base."""
    if not Path(NGINX).exists():
        pytest.skip(f"{NGINX} is missing: apt-get install nginx (make install does it)")
    procs: list[subprocess.Popen[bytes]] = []
    pki = make_pki(tmp_path / "pki")

    def start(upstream: str, port: int) -> str:
        conf = nginx_conf(tmp_path / "nginx", port, upstream, pki.server_cert, pki.server_key)
        procs.append(
            subprocess.Popen(
                [NGINX, "-p", str(conf.parent), "-c", str(conf), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        base = f"https://127.0.0.1:{port}"

        def up() -> bool:
            try:
                context = ssl.create_default_context(cafile=str(pki.ca))
                with urllib.request.urlopen(f"{base}/static/favicon.svg", context=context):
                    return True
            except OSError:
                return False

        assert wait_until(up, 10), (conf.parent / "error.log").read_text()
        return base

    (tmp_path / "nginx").mkdir()
    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def test_behind_nginx_with_tls_the_pages_follow_and_actions_are_accepted(
    start_daemon: Callable[..., Daemon], nginx: Callable[[str, int], str], tmp_path: Path
) -> None:
    public_port = free_port()
    # The daemon must know its public origin before nginx is up: pick nginx's port first.
    daemon, direct = console_daemon(
        start_daemon,
        "--http-admin",
        "--http-public-origin",
        f"https://127.0.0.1:{public_port}",
        "--http-trusted-proxy",
        "127.0.0.1",
    )
    base = nginx(direct, public_port)
    [consumer] = members(daemon, "proxied-app", 1)
    try:
        assert wait_until(lambda: len(consumer.assigned) == 6, 30)
        consumer.commit({(TOPIC, 1): 9})
    finally:
        consumer.close()
    requests: list[str] = []
    with chromium() as browser:
        context = browser.new_context(ignore_https_errors=True)
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{base}/group?id=proxied-app")
        page.wait_for_function(
            "() => document.querySelector('#group-state').innerText.includes('Empty')",
            timeout=SHOWN_MS,
        )
        assert page.locator("#live-status").inner_text() == "live"  # SSE through nginx
        page.get_by_role("button", name="Reset to earliest").click()
        page.wait_for_function(
            "() => document.querySelector('#action-result').innerText.startsWith('Done')",
            timeout=SHOWN_MS,
        )
        page.wait_for_function(  # the live page follows the reset through the proxy
            "() => document.querySelectorAll('#offsets-table tr[data-offset]').length === 6",
            timeout=SHOWN_MS,
        )
        page.screenshot(path=str(tmp_path / "group-behind-nginx.png"), full_page=True)
        context.close()
    assert requests and all(url.startswith(f"{base}/") for url in requests), requests
