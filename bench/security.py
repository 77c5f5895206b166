"""What security costs: SASL logins per second, and heartbeat round trips with TLS and ACLs.

    python -m bench.security [--logins N] [--heartbeats N]

One in-process daemon with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners (test CA made on
the fly). Logins: sequential new connections, each SaslHandshake + SaslAuthenticate until
done, per mechanism and listener. Heartbeats: one joined static member, sequential round
trips, on PLAINTEXT without ACLs and on SASL_SSL with ACLs enabled.
Writes ``bench/results/security.json`` and ``bench/results/security.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import platform
import ssl
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

from coordinator.client.connection import KafkaConnectionClient
from coordinator.group.config import GroupConfig
from coordinator.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from coordinator.security.config import Listener, SecurityProtocol, SecuritySettings
from coordinator.security.credentials import make_credential
from coordinator.settings.config import Settings
from coordinator.shell.server import Server
from coordinator.store import MemoryStore, Write
from tests import wire
from tests.pki import Pki, make_pki

RESULTS = Path(__file__).parent / "results"
P = SecurityProtocol
PASSWORD = "bench-password"


async def _connect(srv: Server, protocol: SecurityProtocol, pki: Pki) -> KafkaConnectionClient:
    tls = ssl.create_default_context(cafile=str(pki.ca)) if protocol.uses_tls else None
    _, c = await asyncio.get_running_loop().create_connection(
        KafkaConnectionClient,
        "127.0.0.1",
        srv.port_of(protocol.value),
        ssl=tls,
        server_hostname="localhost" if tls else None,
    )
    return c


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "per_second": round(len(samples) / sum(samples), 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
    }


async def run(logins: int, heartbeats: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp())
    pki = make_pki(tmp / "pki")
    store = MemoryStore()
    mechanisms = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    store.write(
        Write(
            credentials=[make_credential("bench", PASSWORD, m) for m in mechanisms],
            acls=[
                AclBinding(
                    principal="User:bench",
                    resource_type=ResourceType.GROUP,
                    resource_name="bench-",
                    pattern_type=PatternType.PREFIXED,
                    operation=Operation.READ,
                    permission=Permission.ALLOW,
                )
            ],
        )
    )
    import coordinator.shell.server as server_module

    server_module.open_store = lambda _settings: store  # type: ignore[assignment]
    settings = Settings(
        data_dir=tmp,
        group=GroupConfig(initial_rebalance_delay_ms=0),
        listeners=(
            Listener(P.PLAINTEXT, "127.0.0.1", 0),
            Listener(P.SASL_PLAINTEXT, "127.0.0.1", 0),
            Listener(P.SASL_SSL, "127.0.0.1", 0),
        ),
        security=SecuritySettings(
            ssl_certfile=pki.server_cert,
            ssl_keyfile=pki.server_key,
            sasl_enabled_mechanisms=("PLAIN", *mechanisms),
            acls_enabled=False,
            max_failed_authentications=10**6,
        ),
    )
    srv = Server(settings)
    await srv.start()
    results: dict[str, Any] = {"logins": {}, "heartbeats": {}}
    try:
        for protocol in (P.SASL_PLAINTEXT, P.SASL_SSL):
            for mechanism in ("PLAIN", *mechanisms):
                samples = []
                for _ in range(logins):
                    start = time.perf_counter()
                    c = await _connect(srv, protocol, pki)
                    resp = await wire.sasl_login(c, "bench", PASSWORD, mechanism)
                    samples.append(time.perf_counter() - start)
                    assert resp.error_code == 0, resp
                    c.close()
                results["logins"][f"{protocol.value} {mechanism}"] = _summary(samples)
        assert srv.runtime is not None
        for protocol, acls in ((P.PLAINTEXT, False), (P.SASL_SSL, True)):
            security = srv.runtime.security
            security.settings = dataclasses.replace(security.settings, acls_enabled=acls)
            c = await _connect(srv, protocol, pki)
            if protocol.uses_sasl:
                await wire.sasl_login(c, "bench", PASSWORD)
            group = f"bench-{protocol.value}"
            member, generation = await wire.join_static_leader(c, group, "m", b"")
            samples = []
            for _ in range(heartbeats):
                start = time.perf_counter()
                assert await wire.heartbeat(c, group, member, generation, "m") == 0
                samples.append(time.perf_counter() - start)
            label = f"{protocol.value}, ACLs {'on' if acls else 'off'}"
            results["heartbeats"][label] = _summary(samples)
            c.close()
    finally:
        await srv.stop()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logins", type=int, default=50)
    parser.add_argument("--heartbeats", type=int, default=2000)
    args = parser.parse_args(argv)
    results = uvloop.run(run(args.logins, args.heartbeats))
    results["machine"] = f"{platform.machine()}, {platform.python_version()}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "security.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Security costs",
        "",
        f"`python -m bench.security --logins {args.logins} --heartbeats {args.heartbeats}`"
        f" on {results['machine']}.",
        "",
        "Client and daemon share one process (one event loop): a SCRAM login's time includes",
        "the client's PBKDF2 as well as the daemon's (4096 iterations).",
        "",
        "| login (new connection each) | per second | p50 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    for name, s in results["logins"].items():
        lines.append(f"| {name} | {s['per_second']} | {s['p50_ms']} | {s['p99_ms']} |")
    lines += ["", "| heartbeat round trip | per second | p50 ms | p99 ms |", "|---|---|---|---|"]
    for name, s in results["heartbeats"].items():
        lines.append(f"| {name} | {s['per_second']} | {s['p50_ms']} | {s['p99_ms']} |")
    (RESULTS / "security.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
